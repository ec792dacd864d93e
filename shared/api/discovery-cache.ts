/**
 * Discovery's reads of the proxies, kept a moment in the API process and shared by every discovery
 * of the same read meanwhile (and by those that arrive while it is read): a gateway's per-domain
 * lists, or many clients at once, cost one read of each page per `DISCOVERY_CACHE_MS`, not one each;
 * a pool's fresh Ready members (`fresh=true`, asked by gateways holding requests while it wakes)
 * one read per `FRESH_CACHE_MS` however many ask.
 */
import type { ProxyPage, ProxyRepository, StoredProxy } from '../store/ports.js';

/** How long one read of a page answers discoveries: a Ready change shows within it (the gateway polls every 2 s). */
export const DISCOVERY_CACHE_MS = 2000;
/** How long one read of a pool's Ready members answers: the gateway's wake look comes every 250 ms. */
export const FRESH_CACHE_MS = 200;
/** Reads kept at most (a gateway walking a fleet of 100,000 proxies in pages of 1,000 needs 100). */
const MAX_READS = 256;

interface Entry {
  at: number;
  ttlMs: number;
  read: Promise<unknown>;
  isPage: boolean;
  /** The page, once read (pages only). */
  page?: ProxyPage;
}

export class DiscoveryCache {
  private readonly entries = new Map<string, Entry>();

  constructor(
    private readonly ttlMs = DISCOVERY_CACHE_MS,
    private readonly freshTtlMs = FRESH_CACHE_MS,
  ) {}

  /** The page after `after` as read within `ttlMs` of `now`, or a fresh read (a failed read is not kept). */
  page(store: Pick<ProxyRepository, 'page'>, after: string | null, limit: number, now: number): Promise<ProxyPage> {
    return this.kept(`page:${limit}:${after ?? ''}`, this.ttlMs, now, () => store.page(after, limit), true);
  }

  /**
   * Pool `pool`'s Ready members as read within `freshTtlMs` of `now`, or a new read. A read that
   * finds a member the kept pages do not show Ready retires those pages: the gateway that found it
   * serves it at once, and its next ordinary discovery must not take it away again for up to 2 s.
   */
  readyInPool(
    store: Pick<ProxyRepository, 'readyInPool'>,
    pool: string,
    limit: number,
    now: number,
  ): Promise<StoredProxy[]> {
    return this.kept(`ready:${limit}:${pool}`, this.freshTtlMs, now, async () => {
      const found = await store.readyInPool(pool, limit);
      const shown = new Set(
        [...this.entries.values()].flatMap(
          (e) => e.page?.items.filter((i) => i.doc.status.phase === 'Ready').map((i) => i.doc.metadata.name) ?? [],
        ),
      );
      // Pages still being read were asked for before this read too: they go with the others.
      if (found.some((m) => !shown.has(m.doc.metadata.name)))
        for (const [k, e] of this.entries) if (e.isPage && e.at <= now) this.entries.delete(k);
      return found;
    });
  }

  private kept<T>(key: string, ttlMs: number, now: number, read: () => Promise<T>, isPage = false): Promise<T> {
    const fresh = (e: { at: number; ttlMs: number }) => now - e.at >= 0 && now - e.at < e.ttlMs;
    const kept = this.entries.get(key);
    if (kept && fresh(kept)) return kept.read as Promise<T>;
    for (const [k, e] of this.entries) if (!fresh(e)) this.entries.delete(k);
    // Insertion order is age: past the cap, the oldest read goes.
    if (this.entries.size >= MAX_READS) this.entries.delete(this.entries.keys().next().value ?? '');
    const promise = read();
    const entry: Entry = { at: now, ttlMs, read: promise, isPage };
    this.entries.set(key, entry);
    if (isPage)
      void promise.then(
        (page) => (entry.page = page as ProxyPage),
        () => undefined,
      );
    promise.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return promise;
  }
}
