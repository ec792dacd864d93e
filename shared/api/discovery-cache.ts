/**
 * Discovery's read of the proxies, kept a moment in the API process and shared by every discovery
 * meanwhile (and by those that arrive while it is read): a gateway's per-domain lists, or many
 * clients at once, cost one listing of the store per `DISCOVERY_CACHE_MS`, not one each.
 */
import type { ProxyDoc } from '../domain/status.js';
import type { ProxyRepository } from '../store/ports.js';

/** How long one read of the proxies answers discoveries: a Ready change shows within it (the gateway polls every 2 s). */
export const DISCOVERY_CACHE_MS = 2000;

export class DiscoveryCache {
  private entry: { at: number; read: Promise<ProxyDoc[]> } | undefined;

  constructor(private readonly ttlMs = DISCOVERY_CACHE_MS) {}

  /** The proxies as read within `ttlMs` of `now`, or a fresh read (a failed read is not kept). */
  proxies(store: Pick<ProxyRepository, 'list'>, now: number): Promise<ProxyDoc[]> {
    if (this.entry && now - this.entry.at >= 0 && now - this.entry.at < this.ttlMs) return this.entry.read;
    const read = store.list();
    const entry = { at: now, read };
    this.entry = entry;
    read.catch(() => {
      if (this.entry === entry) this.entry = undefined;
    });
    return read;
  }
}
