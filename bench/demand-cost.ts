/**
 * What reported demand costs (docs/performance.md "Fleets that follow demand"): gateways' real reporters
 * (gateway/demand.ts) send to the real demand route (shared/api/demand.ts), and the real pool
 * controller (shared/reconcile/check.ts, its follow-ups held until due and a failed one delivered
 * again, as Pub/Sub does) reconciles the pools, all in this process with counted Firestore clients
 * on an emulator, in a project of their own. One pool is reported by one gateway, another by many,
 * side by side: their reconciles per interval compare.
 *
 * The pools are autoscaled (one member wanted whatever the demand) with their one spread entry
 * capped at 0 members: no relay serves this project, so no member could become Ready, and a pool
 * waiting for one would be looked at every 2 s for that. Capped, it is halted (CapReached) and
 * looked at as a settled pool with demand is: every autoscale interval, and when a report kicks it.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { postDemand } from '../shared/api/demand.js';
import type { ApiDeps } from '../shared/api/deps.js';
import type { Bus } from '../shared/bus/pubsub.js';
import { decodeBody } from '../shared/bus/message.js';
import { TOPICS } from '../shared/bus/topics.js';
import { parseConfig } from '../shared/config/load.js';
import { LOCAL_DEFAULT_CONFIG } from '../shared/config/local-default.js';
import { poolApplySchema } from '../shared/domain/pool.js';
import { createRegistry } from '../shared/providers/registry.js';
import { handleCheckMessage, type CheckDeps } from '../shared/reconcile/check.js';
import { FollowUpLedger } from '../shared/reconcile/follow-up.js';
import { FirestoreDemandRepository } from '../shared/store/firestore/demand.js';
import { FirestorePoolRepository } from '../shared/store/firestore/pools.js';
import { FirestoreProviderStatusRepository } from '../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../shared/store/firestore/relays.js';
import { FirestoreReportRepository } from '../shared/store/firestore/reports.js';
import { DemandReporter, DEMAND_INTERVAL_MS } from '../gateway/demand.js';
import type { DemandAnswer } from '../gateway/fleet-api.js';
import { benchLogger } from './check-env.js';
import { countedFirestore, diffCounts, type Counts } from './counting.js';

export interface DemandCost {
  /** Gateways reporting `manyPool` (one of them reports `onePool` too). */
  gateways: number;
  onePool: string;
  manyPool: string;
  intervalSeconds: number;
  /** The measured window, in report intervals (after a warm-up). */
  intervals: number;
  /** Reports the reporters sent in the window, per pool. */
  reports: Record<string, number>;
  /** Firestore operations of the demand route (every report) and of the pool controller, in the window. */
  api: Counts;
  controller: Counts;
  /** Pool reconciles in the window, per pool. */
  reconciles: Record<string, number>;
  /** Errors the route or the controller threw (a non-empty list means the figures are not a steady state). */
  failures: string[];
}

/** One simulated client request on `pool` through `reporter` every ~second, 300 ms long, 1 kB each way. */
function traffic(reporter: DemandReporter, pool: string, stop: AbortSignal): Promise<void> {
  return (async () => {
    while (!stop.aborted) {
      const end = reporter.begin(pool);
      setTimeout(() => {
        reporter.bytes(pool, 1000, 1000);
        end(true);
      }, 300);
      await sleep(800 + Math.random() * 400).catch(() => undefined);
    }
  })();
}

/** Reports on their way to the route (the window opens and closes when none is). */
class InFlight {
  private n = 0;
  async track<T>(run: () => Promise<T>): Promise<T> {
    this.n++;
    try {
      return await run();
    } finally {
      this.n--;
    }
  }
  async idle(): Promise<void> {
    while (this.n > 0) await sleep(5);
  }
}

/**
 * Runs `gateways` reporters for `warmupMs`, then measures for `intervals` report intervals.
 *
 * @param project - a project of its own on the emulator `FIRESTORE_EMULATOR_HOST` names
 */
export async function measureDemandCost(opts: {
  project: string;
  gateways: number;
  warmupMs: number;
  intervals: number;
  logFile: string;
}): Promise<DemandCost> {
  const { project } = opts;
  const onePool = 'costone';
  const manyPool = 'costmany';
  const config = parseConfig(structuredClone(LOCAL_DEFAULT_CONFIG), { GOOGLE_CLOUD_PROJECT: project });
  const logger = benchLogger(opts.logFile);
  const failures: string[] = [];

  // The controller: the check function's pool path, its follow-ups held until due (as `check` does).
  const ctl = countedFirestore(project);
  const reconciles: Record<string, number> = { [onePool]: 0, [manyPool]: 0 };
  const pools = new FirestorePoolRepository(ctl.db, logger);
  const reconcile = pools.reconcile.bind(pools);
  pools.reconcile = (name, ...rest) => {
    reconciles[name] = (reconciles[name] ?? 0) + 1;
    return reconcile(name, ...rest);
  };
  // Deliveries in flight: the clients are terminated only once none is (a query still running,
  // or retried by the client after its backoff, would reject on a terminated client with no one
  // to hear it), and a follow-up held until its due time is cut short then.
  const checks = new InFlight();
  const teardown = new AbortController();
  const deliver = (data: unknown): void => {
    if (teardown.signal.aborted) return;
    void checks.track(() =>
      handleCheckMessage(checkDeps, decodeBody('bench', Date.now(), {}, JSON.stringify(data))).catch((err: unknown) => {
        if (teardown.signal.aborted) return;
        failures.push(err instanceof Error ? err.message : String(err));
        // Pub/Sub delivers a message whose push failed again, after its backoff.
        setTimeout(() => deliver(data), 1000);
      }),
    );
  };
  const bus: Bus = {
    publish(topic, data) {
      if (topic === TOPICS.proxyChecks) deliver(data);
      return Promise.resolve('bench');
    },
  };
  const proxies = new FirestoreProxyRepository(ctl.db, logger);
  const relays = new FirestoreRelayRepository(ctl.db, logger, config.statusRefreshSeconds * 1000);
  const checkDeps: CheckDeps = {
    config,
    proxies,
    registry: createRegistry({ config, relays, bus, logger }),
    logger,
    bus,
    providerStatus: new FirestoreProviderStatusRepository(ctl.db),
    rolloutCounts: (p) => proxies.rolloutCounts(p),
    pools,
    demand: new FirestoreDemandRepository(ctl.db),
    followUps: new FollowUpLedger(),
    wait: (ms) => sleep(ms, undefined, { signal: teardown.signal }),
  };
  const provider = config.providers[0]?.name ?? 'local';
  for (const name of [onePool, manyPool]) {
    const request = poolApplySchema.parse({
      apiVersion: 'egress.dev/v1',
      kind: 'ProxyPool',
      action: 'apply',
      metadata: { name },
      spec: {
        autoscale: { minReplicas: 1, maxReplicas: 1, target: { inFlightPerMember: 1000 } },
        template: { spec: { provider } },
        spread: [{ provider, maxReplicas: 0 }],
      },
    });
    await pools.apply(request, Date.now(), Date.now());
  }

  // The API's demand route, on its own counted client.
  const api = countedFirestore(project);
  const apiDeps: ApiDeps = {
    config,
    proxies: new FirestoreProxyRepository(api.db, logger),
    relays: new FirestoreRelayRepository(api.db, logger, config.statusRefreshSeconds * 1000),
    reports: new FirestoreReportRepository(api.db, logger),
    providerStatus: new FirestoreProviderStatusRepository(api.db),
    pools: new FirestorePoolRepository(api.db, logger),
    demand: new FirestoreDemandRepository(api.db),
    bus,
    logger,
  };
  const reports: Record<string, number> = { [onePool]: 0, [manyPool]: 0 };
  const sending = new InFlight();
  const fleet = {
    demand: (pool: string, report: unknown): Promise<DemandAnswer> =>
      sending.track(async () => {
        reports[pool] = (reports[pool] ?? 0) + 1;
        const answer = await postDemand(apiDeps, pool, report);
        return { autoscaled: (answer.body as { autoscaled: boolean }).autoscaled };
      }),
  };

  const stop = new AbortController();
  const reporters = Array.from({ length: opts.gateways }, () => new DemandReporter(fleet, { logger }));
  const loads = reporters.flatMap((r, i) => [
    traffic(r, manyPool, stop.signal),
    ...(i === 0 ? [traffic(r, onePool, stop.signal)] : []),
  ]);
  // Gateways start at different moments: their report timers are not in step.
  for (const r of reporters) {
    r.start();
    await sleep(DEMAND_INTERVAL_MS / opts.gateways);
  }
  const snapshot = () => ({
    api: { ...api.counts },
    ctl: { ...ctl.counts },
    reconciles: { ...reconciles },
    reports: { ...reports },
  });
  try {
    await sleep(opts.warmupMs);
    // Opened and closed with no report on its way, so every report counted has all its operations in.
    await sending.idle();
    const before = snapshot();
    // A whole number of intervals: each reporter's timer fires exactly that many times in it.
    await sleep(opts.intervals * DEMAND_INTERVAL_MS);
    for (const r of reporters) r.stop();
    await sending.idle();
    const after = snapshot();
    const minus = (a: Record<string, number>, b: Record<string, number>) =>
      Object.fromEntries(Object.entries(a).map(([k, v]) => [k, v - (b[k] ?? 0)]));
    return {
      gateways: opts.gateways,
      onePool,
      manyPool,
      intervalSeconds: DEMAND_INTERVAL_MS / 1000,
      intervals: opts.intervals,
      reports: minus(after.reports, before.reports),
      api: diffCounts(after.api, before.api),
      controller: diffCounts(after.ctl, before.ctl),
      reconciles: minus(after.reconciles, before.reconciles),
      failures: [...failures],
    };
  } finally {
    stop.abort();
    for (const r of reporters) r.stop();
    await Promise.all(loads);
    await sending.idle();
    // Follow-ups still waiting for their due time are dropped with the clients.
    teardown.abort();
    await checks.idle();
    await Promise.all([api.db.terminate(), ctl.db.terminate()]);
  }
}
