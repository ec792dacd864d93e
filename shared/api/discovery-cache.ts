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
/** Reads kept at most, of each kind (a gateway walking a fleet of 100,000 proxies in pages of 1,000 needs 100). */
const MAX_READS = 256;

/**
 * Reads by key, each answering for `ttlMs` from when it was asked; a failed read is not kept. Past
 * the cap the oldest goes (insertion order is age).
 */
class KeptReads<T> {
  readonly entries = new Map<string, { at: number; read: Promise<T>; value?: T }>();

  constructor(private readonly ttlMs: number) {}

  get(key: string, now: number, read: () => Promise<T>): Promise<T> {
    const fresh = (at: number) => now - at >= 0 && now - at < this.ttlMs;
    const kept = this.entries.get(key);
    if (kept && fresh(kept.at)) return kept.read;
    for (const [k, e] of this.entries) if (!fresh(e.at)) this.entries.delete(k);
    if (this.entries.size >= MAX_READS) this.entries.delete(this.entries.keys().next().value ?? '');
    const entry: { at: number; read: Promise<T>; value?: T } = { at: now, read: read() };
    this.entries.set(key, entry);
    entry.read.then(
      (value) => (entry.value = value),
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return entry.read;
  }
}

export class DiscoveryCache {
  private readonly pages: KeptReads<ProxyPage>;
  // Apart from the pages: looks at many pools (any name a caller sends) never push a page out.
  private readonly ready: KeptReads<StoredProxy[]>;

  constructor(ttlMs = DISCOVERY_CACHE_MS, freshTtlMs = FRESH_CACHE_MS) {
    this.pages = new KeptReads(ttlMs);
    this.ready = new KeptReads(freshTtlMs);
  }

  /** The page after `after` as read within the cache time of `now`, or a new read. */
  page(store: Pick<ProxyRepository, 'page'>, after: string | null, limit: number, now: number): Promise<ProxyPage> {
    return this.pages.get(`${limit}:${after ?? ''}`, now, () => store.page(after, limit));
  }

  /**
   * Pool `pool`'s Ready members as read within `FRESH_CACHE_MS` of `now`, or a new read. A read
   * that finds a member the kept pages do not show Ready retires those pages (and those still being
   * read, asked for before it): the gateway that found it serves it at once, and its next ordinary
   * discovery must not take it away again for up to 2 s.
   */
  readyInPool(
    store: Pick<ProxyRepository, 'readyInPool'>,
    pool: string,
    limit: number,
    now: number,
  ): Promise<StoredProxy[]> {
    return this.ready.get(`${limit}:${pool}`, now, async () => {
      const found = await store.readyInPool(pool, limit);
      const unshown = new Set(found.map((m) => m.doc.metadata.name));
      for (const e of this.pages.entries.values())
        for (const { doc } of e.value?.items ?? []) if (doc.status.phase === 'Ready') unshown.delete(doc.metadata.name);
      if (unshown.size > 0) for (const [k, e] of this.pages.entries) if (e.at <= now) this.pages.entries.delete(k);
      return found;
    });
  }
}
