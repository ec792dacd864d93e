/**
 * Which fleet proxy a request or tunnel goes through: per-domain learning (learning.ts) or
 * round-robin over the Ready proxies, sticky sessions, a penalty box for proxies that keep
 * failing, and per-domain exclusions. Pure state with an injected clock; no I/O.
 */
import type { Learning } from './learning.js';

/** One Ready fleet proxy as the gateway uses it. */
export interface Upstream {
  name: string;
  provider: string;
  host: string;
  port: number;
  /** `Basic …` for this proxy's own credentials (sent upstream only). */
  authorization: string;
  egressIp: string | undefined;
  /**
   * `host:port` is the proxy's TLS listener, whose certificate must have this fingerprint
   * (discovery's `tlsFingerprint`); absent: the plain listener.
   */
  tls?: { fingerprint: string } | undefined;
  /** The egress's country (ISO 3166-1 alpha-2) and AS number, when discovery knows them. */
  country?: string | undefined;
  asn?: number | undefined;
}

export interface SelectionOptions {
  /** Consecutive failures after which a proxy is skipped (default 3). */
  failuresToSkip: number;
  /** How long a skipped proxy is left out (default 30 s). */
  skipMs: number;
  /** How long a proxy this gateway saw banned by a domain is left out for that domain (default 10 min). */
  banMs: number;
  /** A session unused this long is forgotten (default 30 min). */
  sessionIdleMs: number;
  /** At most this many sessions are remembered; the least recently used goes first (default 10,000). */
  maxSessions: number;
  now: () => number;
}

export const DEFAULT_SELECTION: Omit<SelectionOptions, 'now'> = {
  failuresToSkip: 3,
  skipMs: 30_000,
  banMs: 600_000,
  sessionIdleMs: 1_800_000,
  maxSessions: 10_000,
};

/** What one pick must respect. */
export interface PickRequest {
  session?: string | undefined;
  /** The target host (for per-domain exclusions). */
  domain?: string | undefined;
  /** Proxies already tried for this request. */
  exclude?: ReadonlySet<string>;
  /** The session may not move: when its proxy cannot be used, pick nothing. */
  strict?: boolean | undefined;
  /** This session is forgotten after this long unused (default `sessionIdleMs`). */
  sessionIdleMs?: number | undefined;
}

export class Selector {
  private list: Upstream[] = [];
  private readonly byName = new Map<string, Upstream>();
  private cursor = 0;
  private readonly failures = new Map<string, { count: number; skipUntil: number }>();
  private readonly bans = new Map<string, number>();
  /** Session id → proxy name; Map order is least recently used first. */
  private readonly sessions = new Map<string, { proxy: string; usedAt: number; idleMs: number }>();
  /**
   * Domain → the proxies discovery left out for it (`?for=`): those listed when its list was loaded
   * and missing from it. Recorded as exclusions, not as the allowed names, so that a proxy which
   * joins the fleet after the domain's list was loaded is usable for it at once: kept as allowed
   * names, a fleet that churned past the domain's list (its names deleted, new ones created) would
   * leave nothing usable for the domain until its next load.
   */
  private readonly excluded = new Map<string, ReadonlySet<string>>();
  /** Names of the last ordinary (not fresh) list: what a domain's list leaves out is read against it. */
  private listedNames: ReadonlySet<string> = new Set();

  /**
   * @param learning - per-domain scores to choose by; without it, round-robin
   */
  constructor(
    private readonly options: SelectionOptions,
    private readonly learning?: Learning,
  ) {}

  /**
   * Replaces the Ready list (sorted by name, so rotation order is stable across refreshes). What
   * was counted against a proxy that left the list, or is listed at another address now (replaced
   * under its name), is forgotten. A `fresh` list (a waking pool's members read now) is served but
   * is not what domain lists are read against: those come from the same shared page as an
   * ordinary discovery, which may not show a member found fresh yet.
   */
  setUpstreams(list: readonly Upstream[], options: { fresh?: boolean } = {}): void {
    if (!options.fresh) this.listedNames = new Set(list.map((u) => u.name));
    const before = new Map(this.byName);
    this.list = [...list].sort((a, b) => a.name.localeCompare(b.name));
    this.byName.clear();
    for (const u of this.list) this.byName.set(u.name, u);
    for (const name of this.failures.keys()) {
      const now = this.byName.get(name);
      const was = before.get(name);
      if (!now || (was && (was.host !== now.host || was.port !== now.port))) this.failures.delete(name);
    }
    for (const [name, was] of before) {
      const now = this.byName.get(name);
      if (now && (was.host !== now.host || was.port !== now.port)) this.learning?.forget(name);
    }
  }

  /**
   * The proxies discovery allows for `domain` (its `?for=` list): every proxy of the last ordinary
   * list that is not in it is left out for the domain; undefined forgets the domain's list.
   */
  setAllowedForDomain(domain: string, names: ReadonlySet<string> | undefined): void {
    if (!names) {
      this.excluded.delete(domain);
      return;
    }
    this.excluded.set(domain, new Set([...this.listedNames].filter((name) => !names.has(name))));
  }

  upstreams(): readonly Upstream[] {
    return this.list;
  }

  /** The proxy a session is on now, if it has one. */
  sessionProxy(session: string): string | undefined {
    return this.sessions.get(session)?.proxy;
  }

  /** The proxies of the sessions used since `since` (epoch ms): those a session in use holds. */
  sessionMembers(since: number): string[] {
    const held = new Set<string>();
    for (const s of this.sessions.values()) if (s.usedAt >= since) held.add(s.proxy);
    return [...held];
  }

  sessionCount(): number {
    return this.sessions.size;
  }

  /**
   * @returns the proxy to use, or undefined when none is left (none Ready, all tried or excluded)
   */
  pick(request: PickRequest): Upstream | undefined {
    const now = this.options.now();
    const { session, domain } = request;
    const exclude = request.exclude ?? new Set<string>();
    const usable = (u: Upstream, skipping: boolean) =>
      !exclude.has(u.name) &&
      !(skipping && this.skipped(u.name, now)) &&
      !(domain !== undefined && this.bannedFor(u.name, domain, now)) &&
      !(domain !== undefined && this.excluded.get(domain)?.has(u.name));
    const idleMs = request.sessionIdleMs ?? this.options.sessionIdleMs;
    if (session !== undefined) {
      const held = this.sessions.get(session);
      const current = held && now - held.usedAt <= held.idleMs ? this.byName.get(held.proxy) : undefined;
      if (current && usable(current, false)) {
        this.remember(session, current.name, now, idleMs);
        return current;
      }
      if (request.strict && held && now - held.usedAt <= held.idleMs) return undefined;
    }
    // Skipped proxies are a last resort: better than no proxy at all.
    const chosen = this.choose((u) => usable(u, true), domain) ?? this.choose((u) => usable(u, false), domain);
    if (chosen && session !== undefined) this.remember(session, chosen.name, now, idleMs);
    return chosen;
  }

  /**
   * Counts a failure of `name`.
   *
   * @param definite - the failure needs no second opinion (its port refused the connection): skip it now
   * @returns true when this failure put the proxy in the penalty box (report it once)
   */
  recordFailure(name: string, definite = false): boolean {
    const now = this.options.now();
    const entry = this.failures.get(name) ?? { count: 0, skipUntil: 0 };
    entry.count = definite ? Math.max(entry.count + 1, this.options.failuresToSkip) : entry.count + 1;
    this.failures.set(name, entry);
    if (entry.count < this.options.failuresToSkip || entry.skipUntil > now) return false;
    entry.skipUntil = now + this.options.skipMs;
    entry.count = 0;
    return true;
  }

  /**
   * Counts a success of `name`.
   *
   * @param domain - the target it reached (counted for the pair when learning)
   */
  recordSuccess(name: string, domain?: string): void {
    if (domain !== undefined) this.learning?.record(name, domain, true);
    const entry = this.failures.get(name);
    if (entry && entry.skipUntil <= this.options.now()) this.failures.delete(name);
    else if (entry) entry.count = 0;
  }

  /** Leaves `name` out for `domain` for a while (this gateway saw the domain ban it). */
  recordBan(name: string, domain: string): void {
    this.learning?.record(name, domain, false);
    this.bans.set(`${name}\n${domain}`, this.options.now() + this.options.banMs);
  }

  /**
   * Counts a reset or timeout of `name` against `domain` (learning only).
   *
   * @returns true when the pair keeps failing while the proxy itself is not in the penalty box: it
   *   is now left out for the domain like a ban (report it with the target)
   */
  recordDomainFailure(name: string, domain: string): boolean {
    const cooled = this.learning?.record(name, domain, false) ?? false;
    if (!cooled || this.skipped(name)) return false;
    this.bans.set(`${name}\n${domain}`, this.options.now() + this.options.banMs);
    return true;
  }

  /** Forgets expired sessions, bans and penalties (keeps memory flat over long runs). */
  sweep(): void {
    const now = this.options.now();
    for (const [id, s] of this.sessions) if (now - s.usedAt > s.idleMs) this.sessions.delete(id);
    for (const [key, until] of this.bans) if (until <= now) this.bans.delete(key);
    for (const [name, f] of this.failures) if (f.count === 0 && f.skipUntil <= now) this.failures.delete(name);
  }

  skipped(name: string, now = this.options.now()): boolean {
    return (this.failures.get(name)?.skipUntil ?? 0) > now;
  }

  private bannedFor(name: string, domain: string, now: number): boolean {
    return (this.bans.get(`${name}\n${domain}`) ?? 0) > now;
  }

  /**
   * The next in rotation; when learning, the next in rotation that has not been tried for
   * `domain` yet (each pair is tried once before the draws begin), then a draw by the scores.
   */
  private choose(ok: (u: Upstream) => boolean, domain: string | undefined): Upstream | undefined {
    const learning = this.learning;
    if (!learning || domain === undefined) return this.next(ok);
    const untried = this.next((u) => ok(u) && learning.score(u.name, domain) === undefined);
    if (untried) return untried;
    const n = this.list.length;
    const inRotation: Upstream[] = [];
    for (let i = 0; i < n; i++) {
      const u = this.list[(this.cursor + i) % n];
      if (u && ok(u)) inRotation.push(u);
    }
    const chosen = learning.choose(inRotation, domain);
    if (chosen) this.cursor = (this.list.indexOf(chosen) + 1) % n;
    return chosen;
  }

  private next(ok: (u: Upstream) => boolean): Upstream | undefined {
    const n = this.list.length;
    for (let i = 0; i < n; i++) {
      const at = (this.cursor + i) % n;
      const u = this.list[at];
      if (u && ok(u)) {
        this.cursor = (at + 1) % n;
        return u;
      }
    }
    return undefined;
  }

  private remember(session: string, proxy: string, now: number, idleMs: number): void {
    this.sessions.delete(session);
    this.sessions.set(session, { proxy, usedAt: now, idleMs });
    while (this.sessions.size > this.options.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (oldest.done) break;
      this.sessions.delete(oldest.value);
    }
  }
}
