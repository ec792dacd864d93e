/**
 * A warm check instance's copy of the sweep pages it read, kept current by asking the store only
 * what changed in each page's name range since (`ProxyRepository.changes`): an unchanged page costs
 * two billed reads (the empty changes query and the range's count) instead of one per proxy.
 *
 * What keeps a cached page as good as a fresh read:
 * - every write of a proxy document stamps `changedAt` (both stores), so the changes since the
 *   page's read time are every document written since; each comes with its own `readAt`, so a
 *   cached document's `readAt` is the update time it had when last read, and the fenced writes
 *   (`acquireLease` refuses a stale `readAt`; a status write is preconditioned on the `readAt` it
 *   was decided on, or re-reads, and fences on generation and lease) refuse anything decided on a
 *   copy older than the stored document;
 * - a proxy finalised since is gone from the range's count: when the count is not the cached
 *   names plus the changed ones, the page is read whole again (so is a page with a corrupt document,
 *   which the count includes and the items do not: such a page costs what it did before);
 * - a page grown past the batch size (proxies created in its range) is read whole again, which
 *   moves its end (`next`): the chain goes on from whatever end the page it reached has, so pages
 *   cached with other boundaries (another instance, an older fill) still cover every name once;
 * - a page older than `maxAgeMs` is read whole again: a change missed by any of the above cannot
 *   outlive it.
 *
 * Memory: at most `maxProxies` cached documents (the oldest pages are dropped first).
 */
import type { Logger } from '../logger.js';
import type { Clock, ProxyRepository, StoredProxy } from '../store/ports.js';
import { systemClock } from '../store/clock.js';

/**
 * A cached page older than this is read whole again: six hours, as long as an unchanged status goes
 * unwritten (`statusRefreshSeconds`' default), the longest anything unchanged is trusted unread.
 */
export const SWEEP_CACHE_MAX_AGE_MS = 21_600_000;
/** About 20–40 MB of parsed documents. */
export const SWEEP_CACHE_MAX_PROXIES = 20_000;

interface CachedPage {
  items: StoredProxy[];
  next: string | null;
  /** Where the next `changes` picks up (the last read's time). */
  readTime: number;
  /** When the page was last read whole (wall clock). */
  filledAt: number;
  limit: number;
}

/** How a page was served (for tests and the bench's notes). */
export type PageSource = 'fill' | 'changes';

const nameOf = (s: StoredProxy) => s.doc.metadata.name;
const byName = (a: StoredProxy, b: StoredProxy) => (nameOf(a) < nameOf(b) ? -1 : nameOf(a) > nameOf(b) ? 1 : 0);

export class SweepCache {
  private readonly pages = new Map<string, CachedPage>();
  private cached = 0;

  constructor(
    private readonly clock: Clock = systemClock,
    private readonly maxAgeMs = SWEEP_CACHE_MAX_AGE_MS,
    private readonly maxProxies = SWEEP_CACHE_MAX_PROXIES,
  ) {}

  /**
   * The sweep page after `after`, from the cache brought up to date, or read whole.
   *
   * @param logger - told when a changes query failed and the page was read whole instead
   */
  async page(
    proxies: ProxyRepository,
    after: string | null,
    limit: number,
    logger?: Logger,
  ): Promise<{ items: StoredProxy[]; next: string | null; source: PageSource }> {
    const key = after ?? '';
    const page = this.pages.get(key);
    const now = this.clock.now();
    const changes =
      page && page.limit === limit && now - page.filledAt < this.maxAgeMs
        ? await proxies.changes(after, page.next, page.readTime).catch((err: unknown) => {
            // A changes query that cannot run (an index still building, say) costs a whole read, never the sweep.
            logger?.warn('changes query failed; reading the sweep page whole', { after, error: err });
            return undefined;
          })
        : undefined;
    if (page && changes) {
      const { changed, count, readTime } = changes;
      const merged = new Map(page.items.map((item) => [nameOf(item), item]));
      for (const item of changed) merged.set(nameOf(item), item);
      if (merged.size === count && merged.size <= limit) {
        const items = [...merged.values()].sort(byName);
        this.keep(key, { ...page, items, readTime });
        // Copies: what a reconcile does with its documents never reaches the cache.
        return { items: items.map((item) => structuredClone(item)), next: page.next, source: 'changes' };
      }
    }
    const read = await proxies.page(after, limit);
    const items = read.items.map((item) => structuredClone(item));
    this.keep(key, { items, next: read.next, readTime: read.readTime, filledAt: now, limit });
    return { items: read.items, next: read.next, source: 'fill' };
  }

  /** How many documents are cached now. */
  size(): number {
    return this.cached;
  }

  private keep(key: string, page: CachedPage): void {
    this.cached -= this.pages.get(key)?.items.length ?? 0;
    this.pages.delete(key);
    this.pages.set(key, page);
    this.cached += page.items.length;
    for (const [oldest, dropped] of this.pages) {
      if (this.cached <= this.maxProxies || oldest === key) break;
      this.pages.delete(oldest);
      this.cached -= dropped.items.length;
    }
  }
}
