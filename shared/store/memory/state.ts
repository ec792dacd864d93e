/**
 * The in-memory database the memory repositories share, as the Firestore ones share a project:
 * pools create and drain proxies, reports count on them. Documents are replaced (never changed in
 * place) on every write, so a row's identity is its version (what optimistic.ts compares).
 */
import type { PoolDoc } from '../../domain/pool-status.js';
import type { ProxyDoc } from '../../domain/status.js';
import { UpdateTimes } from '../clock.js';
import type { ProxyEvent } from '../records.js';
import type { Clock, Credentials } from '../ports.js';

/** A stored document and its update time. */
export interface Row<D> {
  doc: D;
  updatedAt: string;
}

/** An event as stored: with its expiry, and its id when the writer named it. */
export type StoredEvent = ProxyEvent & { expireAt: Date; id?: string };

export class MemoryState {
  readonly proxies = new Map<string, Row<ProxyDoc>>();
  readonly pools = new Map<string, Row<PoolDoc>>();
  /** `tombstones/{id}`: proxies by name, pools as `pool.{name}`. */
  readonly tombstones = new Map<string, { requestTime: number; at: string }>();
  readonly secrets = new Map<string, Credentials & { createdAt: string }>();
  /** Audit trails by proxy name, and by pool name. */
  readonly proxyEvents = new Map<string, StoredEvent[]>();
  readonly poolEvents = new Map<string, StoredEvent[]>();
  private readonly times: UpdateTimes;

  constructor(readonly clock: Clock) {
    this.times = new UpdateTimes(clock);
  }

  /** A new row for `doc` (a copy), stamped with the next update time. */
  row<D>(doc: D): Row<D> {
    return { doc: structuredClone(doc), updatedAt: this.times.next() };
  }
}

/** Names in code-point order, as Firestore orders document ids. */
export function byName<T>(entries: Iterable<[string, T]>): [string, T][] {
  return [...entries].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** A trail newest first; events of one instant stay in the order they were added. */
export function newestFirst(trail: StoredEvent[] | undefined): StoredEvent[] {
  return [...(trail ?? [])].sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : 0));
}

/** What `readEvents` returns of a stored event. */
export function plainEvent({ at, type, reason, message }: StoredEvent): ProxyEvent {
  return { at, type, reason, message };
}
