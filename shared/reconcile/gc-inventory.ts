/**
 * A warm `gc` instance's copy of each provider's listing, kept current by asking only what changed
 * (`Provider.listSince`, rule list-since-vouch): a relay's unchanged inventory then costs one read
 * (the relay document) instead of one per instance.
 *
 * What keeps GC as safe as with a whole listing:
 * - the instances read now are marked fresh; one known only from the copy is re-read with `get`
 *   before GC deletes it (`collectGarbage`), so nothing is deleted on a stale copy;
 * - a listing that throws leaves the copy as it was, and GC skips the provider (as with `list`);
 * - the copy is read whole again when older than `maxAgeMs` (six hours), so a change missed by the
 *   provider's marks cannot outlive it.
 */
import type { Instance, InstanceDelta, Provider } from '../providers/contract.js';
import { systemClock } from '../store/clock.js';
import type { Clock } from '../store/ports.js';
import { SWEEP_CACHE_MAX_AGE_MS } from './sweep-cache.js';

/**
 * A cached listing older than this is read whole again: six hours, as long as the sweep cache
 * trusts its pages. The whole read guards only against a change the provider's marks failed to
 * name (rule list-since-vouch forbids that): an instance that did not change is in the copy and
 * collected from it, and a delete re-reads first. What such a miss would leave is an orphan running
 * (and billed) until the next whole read; an hourly one cost 0.014 of the 0.05 reads per proxy per
 * cycle a relay-backed fleet has in all.
 */
export const INVENTORY_CACHE_MAX_AGE_MS = SWEEP_CACHE_MAX_AGE_MS;

/** One provider's listing as GC sees it. */
export interface Listing {
  instances: Instance[];
  /** Names of the instances known only from the copy (not read by this listing): re-read before a delete. */
  cached: ReadonlySet<string>;
}

interface CachedListing {
  instances: Map<string, Instance>;
  cursor: string;
  /** When the listing was last read whole. */
  filledAt: number;
}

export class InventoryCache {
  private readonly listings = new Map<string, CachedListing>();

  constructor(
    private readonly clock: Clock = systemClock,
    private readonly maxAgeMs = INVENTORY_CACHE_MAX_AGE_MS,
  ) {}

  /**
   * The provider's listing: whole (`list`, or `listSince` without a cursor), or the cached copy
   * brought up to date with what changed since it was read.
   *
   * @throws whatever the provider's listing throws (GC then skips the provider)
   */
  async list(provider: Provider): Promise<Listing> {
    if (!provider.listSince) return { instances: await provider.list(), cached: new Set() };
    const now = this.clock.now();
    const kept = this.listings.get(provider.name);
    const current = kept && now - kept.filledAt < this.maxAgeMs ? kept : undefined;
    const delta = await provider.listSince(current?.cursor);
    if (delta.full || !current) return this.fill(provider.name, delta, now);
    const fresh = new Set<string>();
    for (const name of delta.removed) current.instances.delete(name);
    for (const instance of delta.instances) {
      current.instances.set(instance.name, instance);
      fresh.add(instance.name);
    }
    current.cursor = delta.cursor;
    const cached = new Set([...current.instances.keys()].filter((name) => !fresh.has(name)));
    return { instances: [...current.instances.values()], cached };
  }

  /** Replaces the copy with a whole listing (a delta asked without a cursor is taken as whole: nothing else can be). */
  private fill(provider: string, delta: InstanceDelta, now: number): Listing {
    const instances = new Map(delta.instances.map((i) => [i.name, i]));
    this.listings.set(provider, { instances, cursor: delta.cursor, filledAt: now });
    return { instances: delta.instances, cached: new Set() };
  }
}
