/**
 * The `pools/{name}` repository in memory: the rules of pool-rules.ts and proxy-rules.ts (as the
 * Firestore one), on the database it shares with a MemoryProxyRepository (pools create and drain
 * proxies). A reconcile commits only if the pool and every member it read are unchanged.
 */
import { POOL_LABEL, type PoolApplyRequest } from '../../domain/pool.js';
import { poolDocSchema, type PoolDoc } from '../../domain/pool-status.js';
import { proxyDocSchema, type ProxyDoc } from '../../domain/status.js';
import { generateCredentials } from '../credentials-memo.js';
import { EVENT_RETENTION_MS, type ProxyEvent } from '../records.js';
import { GRPC_CODES } from '../grpc-codes.js';
import type { PoolRepository, PoolWrites } from '../ports.js';
import { memberDocs, poolApplyStep, poolTombId } from '../pool-rules.js';
import { orderDelete, type ApplyOutcome, type DeleteOutcome } from '../proxy-rules.js';
import { transaction } from './optimistic.js';
import { byName, newestFirst, plainEvent, type MemoryState, type Row } from './state.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** A member created under a name already taken (Firestore's `create` fails alike). */
class AlreadyExists extends Error {
  readonly code = GRPC_CODES.ALREADY_EXISTS;
}

export class MemoryPoolRepository implements PoolRepository {
  /** @param state - the database shared with the MemoryProxyRepository the pools' members live in */
  constructor(private readonly state: MemoryState) {}

  private parse(row: Row<PoolDoc> | undefined): PoolDoc | undefined {
    const parsed = poolDocSchema.safeParse(structuredClone(row?.doc));
    return parsed.success ? parsed.data : undefined;
  }

  private memberRows(name: string): Row<ProxyDoc>[] {
    return byName(this.state.proxies)
      .filter(([, row]) => row.doc.metadata.labels[POOL_LABEL] === name)
      .map(([, row]) => row);
  }

  get(name: string): Promise<PoolDoc | undefined> {
    return Promise.resolve(this.parse(this.state.pools.get(name)));
  }

  list(): Promise<PoolDoc[]> {
    return Promise.resolve(byName(this.state.pools).flatMap(([, row]) => this.parse(row) ?? []));
  }

  names(): Promise<string[]> {
    return Promise.resolve(byName(this.state.pools).map(([name]) => name));
  }

  members(name: string): Promise<ProxyDoc[]> {
    return Promise.resolve(this.memberRows(name).map((row) => proxyDocSchema.parse(structuredClone(row.doc))));
  }

  /** The identities an apply or delete reads: the pool and its tombstone. */
  private reads(name: string): unknown[] {
    return [this.state.pools.get(name), this.state.tombstones.get(poolTombId(name))];
  }

  apply(request: PoolApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome> {
    const name = request.metadata.name;
    const attempt = () => {
      const seen = this.reads(name);
      const existing = this.parse(this.state.pools.get(name));
      const tombAt = existing ? 0 : (this.state.tombstones.get(poolTombId(name))?.requestTime ?? 0);
      const step = poolApplyStep(existing, tombAt, request, publishTime, now);
      const commit = (): ApplyOutcome => {
        if (step.outcome === 'created') this.state.pools.set(name, this.state.row(step.doc));
        if (existing && step.outcome === 'unchanged' && step.requestTime !== undefined)
          this.state.pools.set(name, this.state.row({ ...existing, requestTime: step.requestTime }));
        if (existing && step.outcome === 'updated') {
          const { requestTime, generation } = step;
          const doc: PoolDoc = { ...existing, spec: request.spec, requestTime, generation };
          doc.metadata = { ...existing.metadata, labels: request.metadata.labels };
          delete doc.deletionRequestedAt;
          this.state.pools.set(name, this.state.row(doc));
        }
        return step.outcome;
      };
      return { seen, commit };
    };
    return transaction(attempt, () => this.reads(name));
  }

  requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome> {
    const attempt = () => {
      const seen = this.reads(name);
      const existing = this.parse(this.state.pools.get(name));
      const tombAt = this.state.tombstones.get(poolTombId(name))?.requestTime ?? 0;
      const step = orderDelete(existing, tombAt, publishTime, now);
      const commit = (): DeleteOutcome => {
        if (step.outcome === 'absent' && step.tombstone)
          this.state.tombstones.set(poolTombId(name), { requestTime: publishTime, at: iso(now) });
        if (existing && step.outcome === 'already' && step.requestTime !== undefined)
          this.state.pools.set(name, this.state.row({ ...existing, requestTime: step.requestTime }));
        if (existing && step.outcome === 'marked')
          this.state.pools.set(name, this.state.row({ ...existing, ...step.patch }));
        return step.outcome;
      };
      return { seen, commit };
    };
    return transaction(attempt, () => this.reads(name));
  }

  /** What a reconcile reads: the pool, how many members, and each member. */
  private reconcileReads(name: string): unknown[] {
    const members = this.memberRows(name);
    return [this.state.pools.get(name), members.length, ...members];
  }

  reconcile<T>(
    name: string,
    clock: () => number,
    decide: (pool: PoolDoc | undefined, members: ProxyDoc[], now: number) => { writes: PoolWrites; result: T },
  ): Promise<{ result: T; created: string[] }> {
    const attempt = () => {
      const now = clock();
      const seen = this.reconcileReads(name);
      const pool = this.parse(this.state.pools.get(name));
      const members = this.memberRows(name).map((row) => proxyDocSchema.parse(structuredClone(row.doc)));
      const { writes, result } = decide(pool, members, now);
      return { seen, commit: () => ({ result, created: pool ? this.write(name, pool, writes, now) : [] }) };
    };
    return transaction(attempt, () => this.reconcileReads(name));
  }

  private write(name: string, pool: PoolDoc, writes: PoolWrites, now: number): string[] {
    const members = memberDocs(name, writes.create, now);
    const taken = members.find((doc) => this.state.proxies.has(doc.metadata.name));
    if (taken) throw new AlreadyExists(`proxy "${taken.metadata.name}" exists`);
    for (const doc of members) {
      this.state.proxies.set(doc.metadata.name, this.state.row(doc));
      this.state.secrets.set(doc.metadata.name, { ...generateCredentials(doc.metadata.name), createdAt: iso(now) });
    }
    for (const proxy of writes.drain) {
      const row = this.state.proxies.get(proxy);
      if (!row) continue;
      const generation = row.doc.generation + 1;
      this.state.proxies.set(proxy, this.state.row({ ...row.doc, deletionRequestedAt: iso(now), generation }));
    }
    if (writes.finalise) {
      this.state.pools.delete(name);
      this.state.tombstones.set(poolTombId(name), { requestTime: pool.requestTime, at: iso(now) });
    } else if (writes.status) {
      this.state.pools.set(name, this.state.row({ ...pool, status: writes.status }));
    }
    return members.map((doc) => doc.metadata.name);
  }

  addEvent(name: string, event: ProxyEvent, keep: number): Promise<void> {
    const expireAt = new Date(Date.parse(event.at) + EVENT_RETENTION_MS);
    const trail = [...(this.state.poolEvents.get(name) ?? []), { ...event, expireAt }];
    this.state.poolEvents.set(name, newestFirst(trail).slice(0, keep));
    return Promise.resolve();
  }

  events(name: string, limit = 20): Promise<ProxyEvent[]> {
    return Promise.resolve(newestFirst(this.state.poolEvents.get(name)).slice(0, limit).map(plainEvent));
  }

  removeEvents(name: string): Promise<void> {
    this.state.poolEvents.delete(name);
    return Promise.resolve();
  }
}
