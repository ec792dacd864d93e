/** The relay's probe round: every Running instance probed through itself, health kept in memory. */
import { context } from '@opentelemetry/api';
import type { Health } from '../shared/domain/status.js';
import type { Logger } from '../shared/logger.js';
import { nextHealth, probeThroughProxy, type ProbeOptions, type ProbeResult } from '../shared/probe/probe.js';
import type { Instance } from '../shared/providers/contract.js';
import { contextFromAttributes } from '../shared/telemetry/propagation.js';
import type { RelayBackend } from './backends/backend.js';
import { ledgerKey } from './ledger.js';

/** Health of one instance incarnation: a recreated instance (new `createdAt`) starts afresh. */
interface HealthEntry {
  createdAt: number;
  health: Health;
}

/** Probe health per `provider/name`, in memory only (it is re-learnt within one round). */
export class HealthBook {
  private readonly entries = new Map<string, HealthEntry>();

  /** The health of this incarnation of the instance, if it was probed. */
  get(provider: string, instance: Pick<Instance, 'name' | 'createdAt'>): Health | undefined {
    const entry = this.entries.get(ledgerKey(provider, instance.name));
    return entry && entry.createdAt === instance.createdAt ? entry.health : undefined;
  }

  /** Records a probe result and returns the new health. */
  update(provider: string, instance: Pick<Instance, 'name' | 'createdAt'>, result: ProbeResult, now: Date): Health {
    const health = nextHealth(this.get(provider, instance), result, now);
    this.entries.set(ledgerKey(provider, instance.name), { createdAt: instance.createdAt, health });
    return health;
  }

  /** Forgets the provider's instances that are not in `keep`. */
  retain(provider: string, keep: ReadonlySet<string>): void {
    for (const key of this.entries.keys()) {
      if (key.startsWith(`${provider}/`) && !keep.has(key.slice(provider.length + 1))) this.entries.delete(key);
    }
  }
}

/** What a probe round needs. */
export interface ProbeRoundDeps {
  backends: ReadonlyMap<string, RelayBackend>;
  book: HealthBook;
  echoUrl: string;
  timeoutMs: number;
  logger: Logger;
  now?: () => number;
  /** Probes in flight at once (default 16). */
  concurrency?: number;
  /** The probe function (tests replace it). */
  probe?: (opts: ProbeOptions) => Promise<ProbeResult>;
  /** The `traceparent` an instance is settling in: its probe joins that trace (see `TraceBook`). */
  traceOf?: (instance: string) => string | undefined;
}

/**
 * Probes one instance through itself and records the result, unless `keepFailure` is false and the
 * probe failed.
 *
 * @returns the health recorded, or undefined when nothing was (no credentials, or a failure not kept)
 */
async function probeInstance(
  deps: ProbeRoundDeps,
  provider: string,
  backend: RelayBackend,
  instance: Instance,
  keepFailure: boolean,
): Promise<Health | undefined> {
  const now = deps.now ?? Date.now;
  const probe = deps.probe ?? probeThroughProxy;
  const credentials = await backend.credentials(instance.name);
  if (!credentials) return undefined;
  const traceparent = deps.traceOf?.(instance.name);
  const parent = traceparent ? contextFromAttributes({ traceparent }) : context.active();
  const result = await context.with(parent, () =>
    probe({
      host: instance.ip,
      port: instance.port,
      ...credentials,
      echoUrl: deps.echoUrl,
      timeoutMs: deps.timeoutMs,
      // Pinned to what this incarnation presented first; the functions keep their own pin too
      // (shared/reconcile/tls-pin.ts), which outlives a restart of this relay.
      ...(instance.tlsPort !== undefined && {
        tls: { port: instance.tlsPort, fingerprint: deps.book.get(provider, instance)?.tlsFingerprint },
      }),
    }),
  );
  // A guest still installing its proxy (never answered, within the backend's startup grace) is
  // left unprobed rather than counted towards replacement.
  const starting =
    now() - instance.createdAt < (backend.startupGraceMs ?? 0) && deps.book.get(provider, instance) === undefined;
  if (!result.ok && (!keepFailure || starting)) return undefined;
  const health = deps.book.update(provider, instance, result, new Date(now()));
  if (!health.ok && health.consecutiveFailures === 1) {
    deps.logger.warn('probe failed', { provider, instance: instance.name, error: health.error });
  } else if (health.ok && result.ok && health.consecutiveFailures === 0) {
    deps.logger.debug('probe ok', {
      provider,
      instance: instance.name,
      latencyMs: health.latencyMs,
      egressIp: health.egressIp,
    });
  }
  return health;
}

/**
 * Probes every Running instance of every backend once. A backend whose listing fails keeps its
 * previous health; instances no longer Running lose theirs.
 */
export async function probeRound(deps: ProbeRoundDeps): Promise<void> {
  const work: Array<() => Promise<void>> = [];
  for (const [provider, backend] of deps.backends) {
    let instances: Instance[];
    try {
      instances = await backend.list();
    } catch (err) {
      deps.logger.warn('cannot list instances to probe', { provider, error: err });
      continue;
    }
    const running = instances.filter((i) => i.state === 'Running');
    deps.book.retain(provider, new Set(running.map((i) => i.name)));
    for (const instance of running) {
      work.push(async () => {
        await probeInstance(deps, provider, backend, instance, true);
      });
    }
  }
  await runLimited(work, deps.concurrency ?? 16, deps.logger);
}

/**
 * Probes an instance the relay has just created, so the report after the create carries its
 * health and its proxy can go Ready on that report rather than a probe interval later. Only a
 * success is recorded: an instance still booting is left to the probe round, which counts failures.
 */
export async function probeCreated(deps: ProbeRoundDeps, provider: string, name: string): Promise<void> {
  const backend = deps.backends.get(provider);
  if (!backend) return;
  const instance = await backend.get(name);
  if (instance.state === 'Running') await probeInstance(deps, provider, backend, instance, false);
}

async function runLimited(work: Array<() => Promise<void>>, limit: number, logger: Logger): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < work.length) {
      const job = work[next++];
      await job?.().catch((err: unknown) => logger.warn('probe task failed', { error: err }));
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, work.length) }, worker));
}
