/**
 * One router per set of proxy filters a username asks for (`pool`, `provider`, `region`, `zone`,
 * `country`, `asn`): each keeps its own Ready list from discovery, all share the gateway's
 * counters and per-domain learning. Scopes unused for a while are stopped; their number is bounded.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { FleetApi, FleetFilters } from './fleet-api.js';
import { GrammarError, scopeOf, type Steering } from './grammar.js';
import type { Learning } from './learning.js';
import type { GatewayMetrics } from './metrics.js';
import { FleetRouter, type RouterOptions } from './router.js';
import type { Upstream } from './selection.js';
import { ApiError } from '../shared/api/api-error.js';

/** A request for a sleeping pool waited `--wake-timeout` and no member became Ready: 503 with Retry-After. */
export class WakeTimeoutError extends Error {
  override readonly name = 'WakeTimeoutError';
  constructor(
    readonly pool: string,
    waitedMs: number,
    readonly retryAfterSeconds: number,
  ) {
    super(`pool "${pool}" is waking: no member became Ready within ${Math.round(waitedMs / 1000)}s; retry later`);
  }
}

/**
 * How often a waiting request looks for the pool's first Ready member: one fresh read of the pool's
 * Ready members (the API shares one read among every look within 200 ms), so a member is found
 * within about this long of becoming Ready.
 */
const WAKE_POLL_MS = 250;
/** The default bound on how long a request for a sleeping pool is held. */
export const DEFAULT_WAKE_TIMEOUT_MS = 120_000;

/** A scope unused this long is stopped (its sessions are forgotten with it). */
const SCOPE_IDLE_MS = 300_000;
/** At most this many scopes run at once; the least recently used is stopped first. */
const MAX_SCOPES = 32;

/** Whether a fleet proxy's egress matches the country and AS number asked for. */
function egressMatches(u: Upstream, s: Steering): boolean {
  return (s.country === undefined || u.country === s.country) && (s.asn === undefined || u.asn === s.asn);
}

/** Discovery narrowed by the egress keys, which the gateway applies to the entries' own fields. */
function narrowed(fleet: FleetApi, s: Steering): FleetApi {
  if (s.country === undefined && s.asn === undefined) return fleet;
  return {
    discover: async (filters, forDomain) =>
      (await fleet.discover(filters, forDomain)).filter((u) => egressMatches(u, s)),
    report: (name, report) => fleet.report(name, report),
    ...(fleet.demand && { demand: fleet.demand.bind(fleet) }),
  };
}

/**
 * The command line's filters with the username's added. The command line bounds what a username
 * may ask for: a pool or provider other than the one the gateway was started with is refused.
 *
 * @throws GrammarError naming the key that asks outside the command line's filters
 */
export function scopeFilters(base: FleetFilters, s: Steering): FleetFilters {
  for (const key of ['pool', 'provider'] as const) {
    const asked = s[key];
    if (asked !== undefined && base[key] !== undefined && base[key] !== asked)
      throw new GrammarError(key, `this gateway serves only ${key} ${JSON.stringify(base[key])}`);
  }
  return {
    pool: s.pool ?? base.pool,
    provider: s.provider ?? base.provider,
    labels: [
      ...(base.labels ?? []),
      ...(s.region !== undefined ? [`region=${s.region}`] : []),
      ...(s.zone !== undefined ? [`zone=${s.zone}`] : []),
    ],
  };
}

export class ScopedRouters {
  private readonly scopes = new Map<string, { router: Promise<FleetRouter>; usedAt: number }>();

  /**
   * @param base - the router of the command line's filters (a username with no filter keys uses it)
   * @param options - the options `base` was made with
   */
  constructor(
    private readonly base: FleetRouter,
    private readonly options: RouterOptions & {
      learning: Learning | false;
      counters: GatewayMetrics;
      /** How long a request for a pool with no Ready member is held while it wakes (default 120 s). */
      wakeTimeoutMs?: number | undefined;
    },
  ) {}

  /**
   * The router for what `steering` asks for, started (first discovery done) when new.
   *
   * @throws GrammarError naming the keys when no Ready proxy satisfies them, or when discovery fails
   */
  async get(steering: Steering): Promise<FleetRouter> {
    const keys = scopeOf(steering);
    if (keys.length === 0) return this.base;
    const id = keys.map((k) => `${k.key}=${k.value}`).join(',');
    const now = (this.options.now ?? Date.now)();
    this.expire(now);
    let scope = this.scopes.get(id);
    if (!scope) {
      const router = new FleetRouter({
        ...this.options,
        fleet: narrowed(this.options.fleet, steering),
        filters: scopeFilters(this.options.filters ?? {}, steering),
      });
      scope = { router: router.start().then(() => router), usedAt: now };
      scope.router.catch(() => this.scopes.delete(id));
      this.scopes.set(id, scope);
      this.evict();
    }
    this.scopes.delete(id);
    this.scopes.set(id, { ...scope, usedAt: now });
    const named = keys.map((k) => k.key).join(', ');
    const router = await scope.router.catch((err: unknown) => {
      throw new GrammarError(named, `discovery for ${id} failed: ${err instanceof Error ? err.message : String(err)}`);
    });
    if (router.selector.upstreams().length > 0) return router;
    const none = () =>
      new GrammarError(named, `no Ready fleet proxy has ${keys.map((k) => `${k.key} ${k.value}`).join(' and ')}`);
    if (steering.pool === undefined || !this.options.demand) throw none();
    return this.wake(router, steering.pool, none);
  }

  /**
   * Holds a request for a pool with no Ready member: reports the demand at once (the API wakes an
   * autoscaled pool), then looks again until a member is Ready or the wake timeout passes.
   *
   * @throws GrammarError when there is no such pool, or it is not autoscaled; WakeTimeoutError after the timeout
   */
  private async wake(router: FleetRouter, pool: string, none: () => GrammarError): Promise<FleetRouter> {
    const demand = this.options.demand;
    if (!demand) throw none();
    const now = this.options.now ?? Date.now;
    const timeoutMs = this.options.wakeTimeoutMs ?? DEFAULT_WAKE_TIMEOUT_MS;
    const startedAt = now();
    const waiting = await demand.wait(pool).catch((err: unknown) => {
      if (err instanceof ApiError && err.status === 404) throw new GrammarError('pool', `no pool "${pool}"`);
      throw new GrammarError('pool', `cannot wake pool "${pool}": ${err instanceof Error ? err.message : String(err)}`);
    });
    try {
      if (!waiting.answer.autoscaled) throw none();
      while (now() - startedAt < timeoutMs) {
        await sleep(Math.min(WAKE_POLL_MS, Math.max(0, timeoutMs - (now() - startedAt))));
        // A failed look is the next one's to make: the request is held until the timeout either way.
        if (await router.lookFresh().catch(() => false)) return router;
        if (router.selector.upstreams().length > 0) return router;
      }
      throw new WakeTimeoutError(pool, now() - startedAt, Math.ceil(timeoutMs / 4000));
    } finally {
      waiting.done();
    }
  }

  /** Stops every scope's refreshing. */
  stop(): void {
    for (const scope of this.scopes.values()) void scope.router.then((r) => r.stop()).catch(() => undefined);
    this.scopes.clear();
  }

  private expire(now: number): void {
    for (const [id, scope] of this.scopes) {
      if (now - scope.usedAt <= SCOPE_IDLE_MS) break;
      this.drop(id);
    }
  }

  private evict(): void {
    while (this.scopes.size > MAX_SCOPES) {
      const oldest = this.scopes.keys().next();
      if (oldest.done) break;
      this.drop(oldest.value);
    }
  }

  private drop(id: string): void {
    const scope = this.scopes.get(id);
    this.scopes.delete(id);
    void scope?.router.then((r) => r.stop()).catch(() => undefined);
  }
}
