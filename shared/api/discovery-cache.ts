/**
 * Discovery's reads of the proxies, one page each (shared/api/paging.ts), kept a moment in the API
 * process and shared by every discovery of the same page meanwhile (and by those that arrive while
 * it is read): a gateway's per-domain lists, or many clients at once, cost one read of each page
 * per `DISCOVERY_CACHE_MS`, not one each.
 */
import type { ProxyPage, ProxyRepository } from '../store/ports.js';

/** How long one read of a page answers discoveries: a Ready change shows within it (the gateway polls every 2 s). */
export const DISCOVERY_CACHE_MS = 2000;
/** Pages kept at most (a gateway walking a fleet of 100,000 proxies in pages of 1,000 needs 100). */
const MAX_PAGES = 256;

export class DiscoveryCache {
  private readonly entries = new Map<string, { at: number; read: Promise<ProxyPage> }>();

  constructor(private readonly ttlMs = DISCOVERY_CACHE_MS) {}

  /** The page after `after` as read within `ttlMs` of `now`, or a fresh read (a failed read is not kept). */
  page(store: Pick<ProxyRepository, 'page'>, after: string | null, limit: number, now: number): Promise<ProxyPage> {
    const key = `${limit}:${after ?? ''}`;
    const fresh = (at: number) => now - at >= 0 && now - at < this.ttlMs;
    const kept = this.entries.get(key);
    if (kept && fresh(kept.at)) return kept.read;
    for (const [k, e] of this.entries) if (!fresh(e.at)) this.entries.delete(k);
    // Insertion order is age: past the cap, the oldest page goes.
    if (this.entries.size >= MAX_PAGES) this.entries.delete(this.entries.keys().next().value ?? '');
    const read = store.page(after, limit);
    const entry = { at: now, read };
    this.entries.set(key, entry);
    read.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    return read;
  }
}
