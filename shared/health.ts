/** The provider-health monitor: checks every configured provider and records the verdict in `providers/{name}`. */
import { asEgressError } from './errors.js';
import type { Logger } from './logger.js';
import type { Provider, ProviderHealth, Registry } from './providers/contract.js';
import type { ProviderStatus } from './store/records.js';
import { systemClock } from './store/clock.js';
import type { Clock, ProviderStatusRepository, ProxyRepository } from './store/ports.js';
import { recordProxiesByPhase } from './telemetry/metrics.js';

export interface HealthDeps {
  registry: Registry;
  providerStatus: ProviderStatusRepository;
  logger: Logger;
  now?: () => number;
  /** A check taking longer than this counts as a failure. */
  timeoutMs?: number;
}

async function checkOne(provider: Provider, now: () => number, timeoutMs: number): Promise<ProviderStatus> {
  const started = now();
  const base = { name: provider.name, type: provider.type, lastCheckAt: new Date(started).toISOString() };
  if (!provider.check)
    return { ...base, status: 'Unknown', message: 'this provider has no health check', latencyMs: 0 };
  let timer: NodeJS.Timeout | undefined;
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    });
    const health = await Promise.race([provider.check(), timeout]);
    return {
      ...base,
      status: health.ok ? 'Healthy' : 'Unhealthy',
      message: health.message,
      latencyMs: health.latencyMs,
      ...(health.detail ? { detail: health.detail } : {}),
    };
  } catch (err) {
    return { ...base, status: 'Unhealthy', message: asEgressError(err).message, latencyMs: now() - started };
  } finally {
    clearTimeout(timer);
  }
}

/** Checks every provider concurrently and writes each verdict; returns them. */
export async function checkProviders(deps: HealthDeps): Promise<ProviderStatus[]> {
  const now = deps.now ?? Date.now;
  const results = await Promise.all(deps.registry.all().map((p) => checkOne(p, now, deps.timeoutMs ?? 20_000)));
  for (const status of results) {
    await deps.providerStatus.write(status);
    if (status.status !== 'Healthy')
      deps.logger.warn('provider unhealthy', { provider: status.name, message: status.message });
  }
  return results;
}

/**
 * The monitor's verdict if it is fresh (younger than three intervals), else undefined: the caller
 * then asks the provider itself. Used by the reconciler and GC.
 */
export function freshVerdict(
  status: ProviderStatus | undefined,
  intervalMs: number,
  now: number,
): ProviderStatus | undefined {
  if (!status || status.status === 'Unknown') return undefined;
  return now - Date.parse(status.lastCheckAt) <= 3 * intervalMs ? status : undefined;
}

/**
 * A provider's health as the reconciler and GC see it: the monitor's fresh verdict when there is
 * one, else the provider's own check (a failing check counts as down), else unknown.
 */
export async function currentHealth(
  provider: Provider,
  opts: { providerStatus?: ProviderStatusRepository | undefined; intervalMs: number; now: number },
): Promise<ProviderHealth | undefined> {
  const verdict = freshVerdict(await opts.providerStatus?.get(provider.name), opts.intervalMs, opts.now);
  if (verdict) return { ok: verdict.status === 'Healthy', message: verdict.message, latencyMs: verdict.latencyMs };
  if (!provider.check) return undefined;
  return provider.check().catch((err: unknown) => ({ ok: false, message: asEgressError(err).message, latencyMs: 0 }));
}

/**
 * How often a warm `health` instance counts the fleet gauges: five ticks at the default interval.
 * Their six `count()` queries were most of the monitor's reads (0.006 per proxy per cycle at 1,000
 * proxies); the gauge keeps its last value in between (it is exported on every flush).
 */
export const FLEET_GAUGE_INTERVAL_MS = 300_000;

/**
 * The fleet gauges (`egress.proxies` by phase) as one `health` instance records them: counted on
 * its first tick and then at most every `intervalMs`. A failed count is logged, never thrown (the
 * monitor's verdicts matter more than a gauge), and tried again on the next tick.
 */
export class FleetGauge {
  private countedAt: number | undefined;

  constructor(
    private readonly clock: Clock = systemClock,
    private readonly intervalMs = FLEET_GAUGE_INTERVAL_MS,
  ) {}

  /** Counts and records the gauges when due; returns whether it counted. */
  async record(deps: { proxies: ProxyRepository; logger: Logger }): Promise<boolean> {
    const now = this.clock.now();
    if (this.countedAt !== undefined && now - this.countedAt < this.intervalMs) return false;
    try {
      recordProxiesByPhase(await deps.proxies.countByPhase());
      this.countedAt = now;
      return true;
    } catch (err) {
      deps.logger.warn('counting proxies by phase failed', { error: asEgressError(err).message });
      return false;
    }
  }
}
