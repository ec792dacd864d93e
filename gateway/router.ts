/**
 * The gateway's core, shared by the proxy server and the Node agent: keeps the Ready list fresh
 * (one discovery request per refresh, plus one per target domain in use), picks a proxy per
 * attempt, retries failed attempts on other proxies, and reports bans and failing proxies.
 */
import type { Logger } from '../shared/logger.js';
import type { FleetApi, FleetFilters, ProxyReport } from './fleet-api.js';
import { DEFAULT_LEARNING, Learning } from './learning.js';
import { GatewayMetrics } from './metrics.js';
import { DEFAULT_SELECTION, Selector, type PickRequest, type SelectionOptions, type Upstream } from './selection.js';

export interface RouterOptions {
  fleet: FleetApi;
  filters?: FleetFilters;
  /** How often the Ready list is fetched again (default 2 s: a change shows within 5 s). */
  refreshMs?: number;
  /** Attempts per request or tunnel, each on a different proxy (default 3). */
  maxTries?: number;
  selection?: Partial<Omit<SelectionOptions, 'now'>>;
  /** Per-domain scores to choose by (shared by the routers of one gateway); false: round-robin. */
  learning?: Learning | false;
  /** Counters to add to (shared by the routers of one gateway); default a new set. */
  counters?: GatewayMetrics;
  logger?: Logger;
  now?: () => number;
}

/** Refused connections that do not count as tries, per request (then they do). */
const MAX_REFUSED = 8;
/** A stale address seen asks for the list again now, at most once in this window. */
const STALE_REFRESH_MS = 1000;

/** What one attempt through one proxy came to. */
export type Attempt<T> =
  | { ok: true; value: T }
  | {
      ok: false;
      reason: string;
      /** Count it against the proxy (it refused, timed out, failed at its hop). */
      penalize: boolean;
      /** Another proxy may do better (false: the target itself failed, or the request cannot be resent). */
      retry: boolean;
      /**
       * The address is no longer the proxy's: its port refused the connection (nothing listens
       * there), or the proxy there refused the credentials (another proxy of the fleet took the
       * port). The proxy is gone or going and the list is stale.
       */
      refused?: boolean;
      /** The domain answered with a ban status: report it and leave the proxy out for that domain. */
      banned?: { status: number };
      /** An answer the client may still get if no other proxy does better; `discard` drops it. */
      fallback?: { value: T; discard: () => void };
    };

/** The outcome of all attempts. */
export type Routed<T> =
  { ok: true; value: T; upstream: Upstream } | { ok: false; reasons: string[]; fallback?: T; upstream?: Upstream };

/** Domains not used for this long stop being refreshed; at most this many are kept. */
const DOMAIN_IDLE_MS = 60_000;
const MAX_DOMAINS = 200;
/** The same report (proxy, reason, target) is sent at most once in this window. */
const REPORT_WINDOW_MS = 30_000;

export class FleetRouter {
  readonly metrics: GatewayMetrics;
  readonly selector: Selector;
  private readonly maxTries: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private readonly domains = new Map<string, number>();
  private readonly loading = new Set<string>();
  private readonly reported = new Map<string, number>();
  private lastRefreshError = '';
  private staleRefreshAt = -Infinity;

  constructor(private readonly options: RouterOptions) {
    this.now = options.now ?? Date.now;
    this.maxTries = options.maxTries ?? 3;
    const selection = { ...DEFAULT_SELECTION, ...options.selection, now: this.now };
    const learning = options.learning ?? new Learning(DEFAULT_LEARNING, this.now);
    this.selector = new Selector(selection, learning || undefined);
    this.metrics = options.counters ?? new GatewayMetrics(selection.maxSessions);
  }

  /** Loads the Ready list once (throws when the API cannot be reached), then keeps refreshing it. */
  async start(): Promise<void> {
    await this.refresh(true);
    this.timer ??= setInterval(() => void this.refresh(false), this.options.refreshMs ?? 2000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Fetches the Ready list (and the lists of domains in use) now. */
  async refresh(throwOnError = false): Promise<void> {
    const { fleet, filters = {} } = this.options;
    try {
      this.selector.setUpstreams(await fleet.discover(filters));
      if (this.lastRefreshError) this.options.logger?.info('discovery reachable again');
      this.lastRefreshError = '';
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (throwOnError) throw err;
      if (message !== this.lastRefreshError)
        this.options.logger?.warn('discovery failed; keeping the last list', { error: message });
      this.lastRefreshError = message;
    }
    const now = this.now();
    for (const [domain, usedAt] of this.domains) {
      if (now - usedAt > DOMAIN_IDLE_MS) {
        this.domains.delete(domain);
        this.selector.setAllowedForDomain(domain, undefined);
      } else void this.loadDomain(domain);
    }
    this.selector.sweep();
    for (const [key, at] of this.reported) if (now - at > REPORT_WINDOW_MS) this.reported.delete(key);
  }

  /** Fetches the list now after a stale address was met, unless that was done within `STALE_REFRESH_MS`. */
  private refreshStale(): void {
    const now = this.now();
    if (now - this.staleRefreshAt < STALE_REFRESH_MS) return;
    this.staleRefreshAt = now;
    void this.refresh(false);
  }

  /** Notes that `domain` is in use: its `?for=` list is fetched now and on each refresh while used. */
  private noteDomain(domain: string): void {
    const known = this.domains.has(domain);
    this.domains.delete(domain);
    this.domains.set(domain, this.now());
    if (this.domains.size > MAX_DOMAINS) {
      const oldest = this.domains.keys().next();
      if (!oldest.done) {
        this.domains.delete(oldest.value);
        this.selector.setAllowedForDomain(oldest.value, undefined);
      }
    }
    if (!known) void this.loadDomain(domain);
  }

  private async loadDomain(domain: string): Promise<void> {
    if (this.loading.has(domain)) return;
    this.loading.add(domain);
    try {
      const list = await this.options.fleet.discover(this.options.filters ?? {}, domain);
      if (this.domains.has(domain)) this.selector.setAllowedForDomain(domain, new Set(list.map((u) => u.name)));
    } catch {
      // The fleet-wide list still applies; the next refresh tries again.
    } finally {
      this.loading.delete(domain);
    }
  }

  /** Sends a report (at most once per proxy, reason and target in a 30 s window); failures are logged. */
  report(name: string, report: ProxyReport): void {
    const key = `${name}|${report.reason}|${report.target ?? ''}`;
    if (this.reported.has(key)) return;
    this.reported.set(key, this.now());
    this.options.fleet
      .report(name, report)
      .then(() => this.options.logger?.info('reported proxy', { proxy: name, ...report }))
      .catch((err: unknown) =>
        this.options.logger?.warn('report failed', { proxy: name, reason: report.reason, error: String(err) }),
      );
  }

  /**
   * Runs `attempt` on one proxy after another until one succeeds, one says not to retry, or the
   * tries run out.
   *
   * @param ctx.session - the client's session id (sticks to one proxy; `strict`: never moves)
   * @param ctx.domain - the target host
   */
  async route<T>(
    ctx: Omit<PickRequest, 'exclude' | 'domain'> & { domain: string },
    attempt: (upstream: Upstream) => Promise<Attempt<T>>,
  ): Promise<Routed<T>> {
    this.noteDomain(ctx.domain);
    const tried = new Set<string>();
    const reasons: string[] = [];
    let fallback: { value: T; discard: () => void; upstream: Upstream } | undefined;
    // A refused connection costs no time and says the proxy is gone (a list a moment stale while
    // proxies are deleted): it does not use up a try, up to MAX_REFUSED of them.
    let refusals = 0;
    for (let tries = 0; tries < this.maxTries;) {
      const upstream = this.selector.pick({ ...ctx, exclude: tried });
      if (!upstream) {
        reasons.push(tried.size === 0 ? 'no Ready fleet proxy matches' : 'no other Ready fleet proxy left');
        break;
      }
      tried.add(upstream.name);
      const result = await attempt(upstream);
      if (result.ok) {
        fallback?.discard();
        this.selector.recordSuccess(upstream.name, ctx.domain);
        return { ok: true, value: result.value, upstream };
      }
      reasons.push(`${upstream.name}: ${result.reason}`);
      this.metrics.error(upstream.name, ctx.session);
      if (result.banned) {
        this.selector.recordBan(upstream.name, ctx.domain);
        this.report(upstream.name, {
          reason: 'banned',
          target: ctx.domain,
          detail: `HTTP ${result.banned.status} from ${ctx.domain} through the gateway`,
        });
      }
      if (result.refused) this.refreshStale();
      const refused = result.refused === true && refusals++ < MAX_REFUSED;
      if (!refused) tries++;
      if (result.penalize && this.selector.recordFailure(upstream.name, result.refused === true)) {
        this.options.logger?.warn('skipping a failing proxy for a while', {
          proxy: upstream.name,
          error: result.reason,
        });
        this.report(upstream.name, { reason: 'error', detail: `gateway: ${result.reason}` });
      }
      if (result.penalize && !result.refused && this.selector.recordDomainFailure(upstream.name, ctx.domain))
        this.report(upstream.name, {
          reason: 'blocked',
          target: ctx.domain,
          detail: `gateway: keeps failing for ${ctx.domain} (${result.reason})`,
        });
      if (result.fallback) {
        fallback?.discard();
        fallback = { ...result.fallback, upstream };
      }
      if (!result.retry) break;
    }
    if (fallback) return { ok: false, reasons, fallback: fallback.value, upstream: fallback.upstream };
    return { ok: false, reasons };
  }
}
