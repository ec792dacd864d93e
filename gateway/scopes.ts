/**
 * One router per set of proxy filters a username asks for (`pool`, `provider`, `region`, `zone`,
 * `country`, `asn`): each keeps its own Ready list from discovery, all share the gateway's
 * counters and per-domain learning. Scopes unused for a while are stopped; their number is bounded.
 */
import type { FleetApi, FleetFilters } from './fleet-api.js';
import { GrammarError, scopeOf, type Steering } from './grammar.js';
import type { Learning } from './learning.js';
import type { GatewayMetrics } from './metrics.js';
import { FleetRouter, type RouterOptions } from './router.js';
import type { Upstream } from './selection.js';

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
    private readonly options: RouterOptions & { learning: Learning | false; counters: GatewayMetrics },
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
    if (router.selector.upstreams().length === 0)
      throw new GrammarError(named, `no Ready fleet proxy has ${keys.map((k) => `${k.key} ${k.value}`).join(' and ')}`);
    return router;
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
