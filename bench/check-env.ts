/**
 * The functions' work run in the bench process with counted clients: `runCheck` (function
 * `check`), `handleRelayReport` (`relay-report`), `checkProviders` (`health`), `collectGarbage`
 * (`gc`). Messages to `proxy-checks` are delivered in-process, as a push would, and counted.
 */
import { appendFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import type { Firestore } from '@google-cloud/firestore';
import type { Bus } from '../shared/bus/pubsub.js';
import { decodeBody } from '../shared/bus/message.js';
import { parseConfig } from '../shared/config/load.js';
import type { Config } from '../shared/config/schema.js';
import { checkProviders, FleetGauge } from '../shared/health.js';
import { createLogger, type Logger } from '../shared/logger.js';
import type { Provider } from '../shared/providers/contract.js';
import type { Registry } from '../shared/providers/contract.js';
import { createRegistry } from '../shared/providers/registry.js';
import { parseCheckMessage, runCheck, type CheckDeps } from '../shared/reconcile/check.js';
import { collectGarbage } from '../shared/reconcile/gc.js';
import { InventoryCache } from '../shared/reconcile/gc-inventory.js';
import { SweepCache } from '../shared/reconcile/sweep-cache.js';
import { handleRelayReport } from '../shared/relay-report.js';
import type { RelayReport } from '../shared/wire/protocol.js';
import { FirestoreProviderStatusRepository } from '../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../shared/store/firestore/relays.js';
import { countedFirestore, countInvocation, countMessage, type Counts } from './counting.js';
import { TOPICS } from '../shared/bus/topics.js';

/** `relay`: the relay-backed `process` provider; `direct`: a provider the check function probes itself. */
export type FleetKind = 'relay' | 'direct';

export const RELAY_ID = 'bench';
export const PROVIDER: Record<FleetKind, string> = { relay: 'proc', direct: 'pool' };

export interface CheckEnv {
  kind: FleetKind;
  config: Config;
  db: Firestore;
  counts: Counts;
  proxies: FirestoreProxyRepository;
  relays: FirestoreRelayRepository;
  registry: Registry;
  bus: Bus;
  logger: Logger;
  deps: CheckDeps;
  /** Runs one scheduled sweep (`{sweep: true}` from the scheduler) and every page it chains. */
  sweep(): Promise<void>;
  /** The same on a check instance whose sweep cache is empty (a cold instance; credentials still remembered). */
  coldSweep(): Promise<void>;
  /** Applies one relay report as the `relay-report` function would (one invocation, one message). */
  report(report: RelayReport): Promise<void>;
  /** One `health` function run (provider verdicts, fleet gauges), as if at `at` (default now). */
  health(at?: number): Promise<void>;
  /** The same on a new `health` instance: it counts the fleet gauges (a warm one, every five minutes). */
  coldHealth(): Promise<void>;
  /** One GC pass (`gc` function), on a warm instance (its owner and inventory caches kept from the last pass). */
  gc(): Promise<void>;
  /** One GC pass on an instance whose owner cache (`owners`) or inventory cache (`inventory`) is empty. */
  coldGc(cache: 'owners' | 'inventory'): Promise<void>;
  /** Errors the delivered functions threw (a non-empty list means the run is not a steady state). */
  failures: string[];
}

/** A silent logger that keeps warnings and errors in `file` for inspection. */
export function benchLogger(file: string): Logger {
  return createLogger({ write: (line) => appendFileSync(file, `${line}\n`), level: 'WARNING' });
}

/** Production defaults (shared/config/schema.ts), one provider of the given kind. */
export function benchConfig(kind: FleetKind, project: string, echoUrl: string): Config {
  const provider =
    kind === 'relay'
      ? { name: PROVIDER.relay, type: 'process', relay: RELAY_ID, options: { heartbeatTimeoutSeconds: 3600 } }
      : { name: PROVIDER.direct, type: 'gcp' };
  return parseConfig({ project, installationId: 'bench', echoUrl, providers: [provider] });
}

/**
 * One check function's dependencies (counted Firestore, stores, provider registry, provider health,
 * sweep caches), wired the way `functions/check` wires them, in one place the bench can read.
 *
 * @param direct - for kind `direct`: the provider standing in for a cloud API (no Firestore use)
 */
export function createCheckEnv(
  kind: FleetKind,
  project: string,
  echoUrl: string,
  logFile: string,
  direct?: Provider,
): CheckEnv {
  const config = benchConfig(kind, project, echoUrl);
  const { db, counts } = countedFirestore(project);
  const logger = benchLogger(logFile);
  const proxies = new FirestoreProxyRepository(db, logger);
  const relays = new FirestoreRelayRepository(db, logger, config.statusRefreshSeconds * 1000);
  const inFlight = new Set<Promise<void>>();
  const failures: string[] = [];
  /** Runs one function invocation, counting it and its wall time. */
  const invoke = async (run: () => Promise<void>) => {
    const started = performance.now();
    try {
      await run();
    } finally {
      countInvocation(counts, started, performance.now());
    }
  };
  const deliver = (data: unknown) => {
    const task = invoke(async () => {
      await runCheck(deps, parseCheckMessage(data));
    }).catch((err: unknown) => {
      failures.push(err instanceof Error ? err.message : String(err));
    });
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
  };
  const bus: Bus = {
    publish(topic, data, attributes = {}, sign) {
      const text = JSON.stringify(data);
      countMessage(counts, topic, text, { ...attributes, ...sign?.(text) });
      if (topic === TOPICS.proxyChecks) deliver(data);
      return Promise.resolve(`bench-${counts.messages}`);
    },
  };
  const registry: Registry = direct
    ? { get: (n) => (n === direct.name ? direct : undefined), missing: (n) => `no provider ${n}`, all: () => [direct] }
    : createRegistry({ config, relays, bus, logger });
  const providerStatus = new FirestoreProviderStatusRepository(db);
  const deps: CheckDeps = {
    config,
    proxies,
    registry,
    logger,
    bus,
    providerStatus,
    rolloutCounts: (p) => proxies.rolloutCounts(p),
    // One check instance serving every page of every sweep, warm throughout (`coldSweep` empties it).
    sweepCache: new SweepCache(),
  };
  // One warm gc instance's owner and inventory caches, as the function keeps them.
  let gcOwners = new SweepCache();
  let gcInventory = new InventoryCache();
  // One warm health instance's gauge, as the function keeps it.
  let fleetGauge = new FleetGauge();
  const drain = async () => {
    while (inFlight.size > 0) await Promise.all([...inFlight]);
  };
  return {
    kind,
    config,
    db,
    counts,
    proxies,
    relays,
    registry,
    bus,
    logger,
    deps,
    failures,
    async sweep() {
      // The scheduler's publish: one message, then each page publishes the next one.
      await bus.publish(TOPICS.proxyChecks, { sweep: true });
      await drain();
    },
    async coldSweep() {
      deps.sweepCache = new SweepCache();
      await this.sweep();
    },
    async report(report) {
      const text = JSON.stringify(report);
      countMessage(counts, 'relay-reports', text, { relay: report.relay });
      const message = decodeBody(`report-${report.seq}`, Date.now(), { relay: report.relay }, text);
      await invoke(async () => {
        const outcome = await handleRelayReport({ config, relays, bus, logger, allowUnsignedRelays: true }, message);
        if (outcome !== 'applied') failures.push(`report ${report.seq} was ${outcome}`);
      });
      await drain();
    },
    async health(at) {
      countMessage(counts, 'health-ticks', '{}', {});
      await invoke(async () => {
        await checkProviders({ registry, providerStatus, logger, ...(at === undefined ? {} : { now: () => at }) });
        await fleetGauge.record({ proxies, logger });
      });
    },
    async coldHealth() {
      fleetGauge = new FleetGauge();
      await this.health();
    },
    async gc() {
      countMessage(counts, 'gc-ticks', '{}', {});
      await invoke(async () => {
        await collectGarbage({
          config,
          proxies,
          registry,
          logger,
          providerStatus,
          owners: gcOwners,
          inventory: gcInventory,
        });
      });
      await drain();
    },
    async coldGc(cache) {
      if (cache === 'owners') gcOwners = new SweepCache();
      else gcInventory = new InventoryCache();
      await this.gc();
    },
  };
}
