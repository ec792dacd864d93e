/**
 * The gateway's core, shared by the proxy server and the Node agent: keeps the Ready list fresh
 * (one discovery at a time, plus a bounded few per target domain in use), picks a proxy per
 * attempt, retries failed attempts on other proxies, and reports bans and failing proxies once a
 * later discovery shows the failure was the proxy's, not the gateway's stale list.
 */
import type { Logger } from '../shared/logger.js';
import type { FleetApi, FleetFilters, ProxyReport } from './fleet-api.js';
import type { DemandReporter } from './demand.js';
import { DEFAULT_LEARNING, Learning } from './learning.js';
import { GatewayMetrics, type UsageRecorder } from './metrics.js';
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
  /** Counts the demand on the router's pool (filters.pool) for the API's autoscaler; none when absent. */
  demand?: DemandReporter;
  logger?: Logger;
  now?: () => number;
  /** Attempts that took this long in all are logged with their proxies and times (default 5 s). */
  slowRouteMs?: number;
}

/** Refused connections that do not count as tries, per request (then they do). */
const MAX_REFUSED = 8;
/** A stale address seen asks for the list again now, at most once in this window. */
const STALE_REFRESH_MS = 1000;
/**
 * A request (or tunnel) whose attempts took this long before an answer or a failure is logged with
 * each attempt's proxy, outcome and time, by default: clients commonly give up after 10 s, and
 * without the attempts a request lost that way leaves no trace at the gateway.
 */
const SLOW_ROUTE_MS = 5000;
/** At most one slow-request line in this time; the others are counted in the next. */
const SLOW_WARNING_GAP_MS = 1000;

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
/** A domain's list is fetched again at most this often, and at most this many domain lists at once. */
const DOMAIN_REFRESH_MS = 10_000;
const MAX_DOMAIN_LOADS = 4;
/** The same report (proxy, reason, target) is sent at most once in this window. */
const REPORT_WINDOW_MS = 30_000;

export class FleetRouter {
  /** Records this router's traffic (its session traffic under its pool). */
  readonly metrics: UsageRecorder;
  readonly selector: Selector;
  private readonly maxTries: number;
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private readonly domains = new Map<string, number>();
  private readonly loading = new Set<string>();
  /** When each domain's list was last asked for. */
  private readonly domainLoadedAt = new Map<string, number>();
  private readonly reported = new Map<string, number>();
  /** When the last slow-request line was logged (performance.now()), and the slow requests since not logged. */
  private lastSlowWarning = -Infinity;
  private slowNotLogged = 0;
  /** Reports waiting for a discovery begun after their failure: sent only if it still lists the proxy as it was tried. */
  private pending: { upstream: Upstream; report: ProxyReport; at: number }[] = [];
  /** The latest fleet-wide list, by name. */
  private listed = new Map<string, Upstream>();
  /** The discovery in flight, and the one queued behind it (one at a time). */
  private running: Promise<void> | undefined;
  private queued: Promise<void> | undefined;
  private lastRefreshError = '';
  private staleRefreshAt = -Infinity;
  private unhold: (() => void) | undefined;

  constructor(private readonly options: RouterOptions) {
    this.now = options.now ?? Date.now;
    this.maxTries = options.maxTries ?? 3;
    const selection = { ...DEFAULT_SELECTION, ...options.selection, now: this.now };
    const learning = options.learning ?? new Learning(DEFAULT_LEARNING, this.now);
    this.selector = new Selector(selection, learning || undefined);
    const pool = options.filters?.pool;
    const demand = options.demand;
    // The pool's bytes go into its usage counters too (reported with its demand).
    const onBytes = pool && demand ? (received: number, sent: number) => demand.bytes(pool, received, sent) : undefined;
    this.metrics = (options.counters ?? new GatewayMetrics()).recorder(pool, onBytes);
    // Sessions used within two report intervals hold their members from being scaled away.
    if (pool && options.demand)
      this.unhold = options.demand.holdSessions(pool, () => this.selector.sessionMembers(this.now() - 10_000));
  }

  /** Loads the Ready list once (throws when the API cannot be reached), then keeps refreshing it. */
  async start(): Promise<void> {
    await this.refresh(true);
    // A tick while a discovery is still in flight starts none: a slow API is not asked twice.
    this.timer ??= setInterval(() => {
      if (!this.running) void this.begin(false);
    }, this.options.refreshMs ?? 2000);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
    this.unhold?.();
  }

  /**
   * Fetches the Ready list (and the lists of domains due) now, or, while a discovery is in flight,
   * right after it: never two at once. Callers meanwhile share the one queued.
   */
  refresh(throwOnError = false): Promise<void> {
    if (!this.running) return this.begin(throwOnError);
    this.queued ??= this.running
      .catch(() => undefined)
      .then(() => {
        this.queued = undefined;
        return this.begin(throwOnError);
      });
    return this.queued;
  }

  /**
   * Looks for Ready members of this router's pool read now (`fresh`), not from the API's cached
   * page, and serves them at once when there are any: a request held while the pool wakes is
   * answered as soon as its first member is Ready. The next refresh brings the whole list.
   *
   * @returns whether any was found
   */
  async lookFresh(): Promise<boolean> {
    const { fleet, filters = {} } = this.options;
    const list = await fleet.discover({ ...filters, fresh: true });
    if (list.length === 0) return false;
    this.selector.setUpstreams(list, { fresh: true });
    this.listed = new Map(list.map((u) => [u.name, u]));
    return true;
  }

  private begin(throwOnError: boolean): Promise<void> {
    const run = this.discover(throwOnError).finally(() => {
      if (this.running === run) this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async discover(throwOnError: boolean): Promise<void> {
    const { fleet, filters = {} } = this.options;
    const startedAt = this.now();
    try {
      const list = await fleet.discover(filters);
      this.selector.setUpstreams(list);
      this.listed = new Map(list.map((u) => [u.name, u]));
      this.confirmReports(startedAt);
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
        this.domainLoadedAt.delete(domain);
        this.selector.setAllowedForDomain(domain, undefined);
      }
    }
    // The domains whose lists are oldest first, a few at a time: per-domain lists never drive discovery.
    const due = [...this.domains.keys()]
      .filter((d) => now - (this.domainLoadedAt.get(d) ?? -Infinity) >= DOMAIN_REFRESH_MS)
      .sort((a, b) => (this.domainLoadedAt.get(a) ?? -Infinity) - (this.domainLoadedAt.get(b) ?? -Infinity));
    for (const domain of due) void this.loadDomain(domain);
    this.selector.sweep();
    for (const [key, at] of this.reported) if (now - at > REPORT_WINDOW_MS) this.reported.delete(key);
    this.pending = this.pending.filter((p) => now - p.at <= REPORT_WINDOW_MS);
  }

  /**
   * Sends the reports whose failure came before a discovery begun at `startedAt` that still lists
   * the proxy at the address and with the credentials it was tried with; drops the others: their
   * proxy left the list or got a new instance, so the failure was the list's staleness, not the proxy's.
   */
  private confirmReports(startedAt: number): void {
    const ready = this.pending.filter((p) => p.at <= startedAt);
    this.pending = this.pending.filter((p) => p.at > startedAt);
    for (const { upstream, report } of ready) {
      const now = this.listed.get(upstream.name);
      const same =
        now !== undefined &&
        now.host === upstream.host &&
        now.port === upstream.port &&
        now.authorization === upstream.authorization;
      if (same) this.send(upstream.name, report);
      else
        this.options.logger?.info('not reporting a proxy the latest discovery no longer lists as tried', {
          proxy: upstream.name,
          reason: report.reason,
        });
    }
  }

  /** Fetches the list now after a stale address was met, unless that was done within `STALE_REFRESH_MS`. */
  private refreshStale(): void {
    const now = this.now();
    if (now - this.staleRefreshAt < STALE_REFRESH_MS) return;
    this.staleRefreshAt = now;
    void this.refresh(false).catch(() => undefined);
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
        this.domainLoadedAt.delete(oldest.value);
        this.selector.setAllowedForDomain(oldest.value, undefined);
      }
    }
    if (!known) void this.loadDomain(domain);
  }

  private async loadDomain(domain: string): Promise<void> {
    if (this.loading.has(domain) || this.loading.size >= MAX_DOMAIN_LOADS) return;
    this.loading.add(domain);
    this.domainLoadedAt.set(domain, this.now());
    try {
      const list = await this.options.fleet.discover(this.options.filters ?? {}, domain);
      if (this.domains.has(domain)) this.selector.setAllowedForDomain(domain, new Set(list.map((u) => u.name)));
    } catch {
      // The fleet-wide list still applies; the next refresh tries again.
    } finally {
      this.loading.delete(domain);
    }
  }

  /**
   * Reports a failure through `upstream` (at most once per proxy, reason and target in a 30 s
   * window) once the next discovery confirms the proxy is still listed as it was tried.
   */
  report(upstream: Upstream, report: ProxyReport): void {
    const key = `${upstream.name}|${report.reason}|${report.target ?? ''}`;
    if (this.reported.has(key)) return;
    const at = this.now();
    this.reported.set(key, at);
    this.pending.push({ upstream, report: { ...report, observedAt: new Date(at).toISOString() }, at });
  }

  /** Sends a confirmed report; failures are logged. */
  private send(name: string, report: ProxyReport): void {
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
    const pool = this.options.filters?.pool;
    const end = pool ? this.options.demand?.begin(pool) : undefined;
    let answered = false;
    try {
      const routed = await this.attempts(ctx, attempt);
      answered = routed.ok;
      return routed;
    } finally {
      end?.(answered);
    }
  }

  private async attempts<T>(
    ctx: Omit<PickRequest, 'exclude' | 'domain'> & { domain: string },
    attempt: (upstream: Upstream) => Promise<Attempt<T>>,
  ): Promise<Routed<T>> {
    const tried = new Set<string>();
    const reasons: string[] = [];
    const began = performance.now();
    /** Each attempt's proxy, outcome and milliseconds, for the slow-route warning (formatted only then). */
    const spent: [string, string, number][] = [];
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
      const startedAt = performance.now();
      const result = await attempt(upstream);
      const use = { proxy: upstream.name, domain: ctx.domain, session: ctx.session };
      const outcome = result.ok ? 'ok' : result.banned ? 'banned' : 'failed';
      const ms = performance.now() - startedAt;
      this.metrics.attempt(use, outcome, ms / 1000);
      spent.push([upstream.name, result.ok ? 'ok' : result.reason, ms]);
      if (result.ok) {
        fallback?.discard();
        this.selector.recordSuccess(upstream.name, ctx.domain);
        this.warnIfSlow(ctx.domain, began, spent);
        return { ok: true, value: result.value, upstream };
      }
      reasons.push(`${upstream.name}: ${result.reason}`);
      if (result.banned) {
        this.selector.recordBan(upstream.name, ctx.domain);
        this.report(upstream, {
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
        this.report(upstream, { reason: 'error', detail: `gateway: ${result.reason}` });
      }
      if (result.penalize && !result.refused && this.selector.recordDomainFailure(upstream.name, ctx.domain))
        this.report(upstream, {
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
    this.warnIfSlow(ctx.domain, began, spent);
    if (fallback) return { ok: false, reasons, fallback: fallback.value, upstream: fallback.upstream };
    return { ok: false, reasons };
  }

  /**
   * Logs the attempts of a route that took `slowRouteMs` ({@link SLOW_ROUTE_MS}) or more, at most
   * one line a second: during an outage every request is slow, and the lines in between are
   * counted in the next one (`moreSinceLast`).
   */
  private warnIfSlow(domain: string, began: number, spent: [string, string, number][]): void {
    const now = performance.now();
    const ms = now - began;
    if (ms < (this.options.slowRouteMs ?? SLOW_ROUTE_MS)) return;
    if (now - this.lastSlowWarning < SLOW_WARNING_GAP_MS) {
      this.slowNotLogged++;
      return;
    }
    this.lastSlowWarning = now;
    this.options.logger?.warn('slow request through the fleet', {
      domain,
      ms: Math.round(ms),
      startedAt: new Date(Date.now() - ms).toISOString(),
      attempts: spent.map(([proxy, outcome, took]) => `${proxy}: ${outcome} (${Math.round(took)} ms)`),
      ...(this.slowNotLogged > 0 && { moreSinceLast: this.slowNotLogged }),
    });
    this.slowNotLogged = 0;
  }
}
