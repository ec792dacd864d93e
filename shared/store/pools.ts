/** The `pools/{name}` repository: pool requests, the members' query, and the reconcile transaction. */
import { randomBytes } from 'node:crypto';
import { FieldPath, FieldValue, type Firestore, type Transaction } from '@google-cloud/firestore';
import { MEMBER_SUFFIX_LENGTH, POOL_LABEL, type PoolApplyRequest } from '../domain/pool.js';
import { initialPoolStatus, poolDocSchema, type PoolDoc, type PoolStatus } from '../domain/pool-status.js';
import { initialStatus, proxyDocSchema, type ProxyDoc } from '../domain/status.js';
import type { Logger } from '../logger.js';
import { COLLECTIONS } from './firestore.js';
import { appendEvent, readEvents, type ProxyEvent } from './events.js';
import { generateCredentials, type ApplyOutcome, type DeleteOutcome } from './proxies.js';

const iso = (ms: number) => new Date(ms).toISOString();
/** Pools and proxies share `tombstones`; a pool's is `pool.{name}` (a proxy name has no dot). */
const tombId = (name: string) => `pool.${name}`;

/** What one pool reconcile writes, decided on what the transaction read. */
export interface PoolWrites {
  create: { spec: ProxyDoc['spec']; labels: Record<string, string> }[];
  drain: string[];
  status?: PoolStatus;
  /** Remove the pool document (a deleted pool whose members are all gone). */
  finalise?: boolean;
}

/** A fresh member name `<pool>-<5 random letters and digits>`. */
export function memberName(pool: string): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(MEMBER_SUFFIX_LENGTH);
  return `${pool}-${[...bytes].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

export class PoolStore {
  constructor(
    private readonly db: Firestore,
    private readonly logger: Logger,
  ) {}

  private ref(name: string) {
    return this.db.collection(COLLECTIONS.pools).doc(name);
  }

  private membersQuery(name: string) {
    return this.db.collection(COLLECTIONS.proxies).where(new FieldPath('metadata', 'labels', POOL_LABEL), '==', name);
  }

  private parse(name: string, data: unknown): PoolDoc | undefined {
    const parsed = poolDocSchema.safeParse(data);
    if (parsed.success) return parsed.data;
    this.logger.error('corrupt pool document ignored', { pool: name, issue: parsed.error.issues[0]?.message });
    return undefined;
  }

  private parseMembers(docs: { id: string; data(): unknown }[]): ProxyDoc[] {
    return docs.flatMap((d) => {
      const parsed = proxyDocSchema.safeParse(d.data());
      return parsed.success ? [parsed.data] : [];
    });
  }

  async get(name: string): Promise<PoolDoc | undefined> {
    const snap = await this.ref(name).get();
    return snap.exists ? this.parse(name, snap.data()) : undefined;
  }

  async list(): Promise<PoolDoc[]> {
    const snap = await this.db.collection(COLLECTIONS.pools).orderBy(FieldPath.documentId()).get();
    return snap.docs.flatMap((d) => this.parse(d.id, d.data()) ?? []);
  }

  async names(): Promise<string[]> {
    const snap = await this.db.collection(COLLECTIONS.pools).select().get();
    return snap.docs.map((d) => d.id);
  }

  /** The pool's members (every `proxies/{name}` labelled with it), in name order. */
  async members(name: string): Promise<ProxyDoc[]> {
    const snap = await this.membersQuery(name).get();
    return this.parseMembers(snap.docs).sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  }

  /**
   * Records a pool apply. Requests older than the newest one applied (or than a completed delete)
   * are stale and ignored, so redelivered and reordered messages converge.
   */
  async apply(request: PoolApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome> {
    const name = request.metadata.name;
    return this.db.runTransaction(async (tx) => {
      const [snap, tomb] = await Promise.all([
        tx.get(this.ref(name)),
        tx.get(this.db.collection(COLLECTIONS.tombstones).doc(tombId(name))),
      ]);
      if (!snap.exists && publishTime <= Number(tomb.get('requestTime') ?? 0)) return 'stale';
      const existing = snap.exists ? this.parse(name, snap.data()) : undefined;
      if (existing && publishTime < existing.requestTime) return 'stale';
      if (!existing) {
        const doc: PoolDoc = {
          apiVersion: 'egress.dev/v1',
          kind: 'ProxyPool',
          metadata: { name, labels: request.metadata.labels },
          spec: request.spec,
          generation: 1,
          requestTime: publishTime,
          createdAt: iso(now),
          status: initialPoolStatus(),
        };
        tx.set(this.ref(name), doc);
        return 'created';
      }
      const changed =
        JSON.stringify(existing.spec) !== JSON.stringify(request.spec) ||
        JSON.stringify(existing.metadata.labels) !== JSON.stringify(request.metadata.labels) ||
        existing.deletionRequestedAt !== undefined;
      if (!changed) {
        if (publishTime > existing.requestTime) tx.update(this.ref(name), { requestTime: publishTime });
        return 'unchanged';
      }
      tx.update(this.ref(name), {
        spec: request.spec,
        'metadata.labels': request.metadata.labels,
        requestTime: publishTime,
        generation: existing.generation + 1,
        deletionRequestedAt: FieldValue.delete(),
      });
      return 'updated';
    });
  }

  /** Marks a pool for deletion (its reconcile then drains every member), or leaves a tombstone. */
  async requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome> {
    return this.db.runTransaction(async (tx) => {
      const snap = await tx.get(this.ref(name));
      const tombRef = this.db.collection(COLLECTIONS.tombstones).doc(tombId(name));
      if (!snap.exists) {
        const tomb = await tx.get(tombRef);
        if (Number(tomb.get('requestTime') ?? 0) < publishTime)
          tx.set(tombRef, { requestTime: publishTime, at: iso(now) });
        return 'absent';
      }
      const existing = this.parse(name, snap.data());
      if (!existing) {
        tx.delete(this.ref(name));
        return 'absent';
      }
      if (publishTime < existing.requestTime) return 'stale';
      if (existing.deletionRequestedAt) {
        if (publishTime > existing.requestTime) tx.update(this.ref(name), { requestTime: publishTime });
        return 'already';
      }
      tx.update(this.ref(name), {
        deletionRequestedAt: iso(now),
        requestTime: publishTime,
        generation: existing.generation + 1,
      });
      return 'marked';
    });
  }

  /**
   * One pool reconcile as a transaction: reads the pool and all its members, lets `decide` choose
   * the writes, and commits them together with the pool's new status. Every transaction that
   * writes also writes the pool document, so two reconciles of one pool (parallel workers,
   * redelivered kicks) cannot both commit decisions made on the same read: the second is retried
   * on what the first wrote. A member whose status changes meanwhile retries it too.
   *
   * @returns what `decide` returned, and the names of the members created
   */
  async reconcile<T>(
    name: string,
    now: number,
    decide: (pool: PoolDoc | undefined, members: ProxyDoc[]) => { writes: PoolWrites; result: T },
  ): Promise<{ result: T; created: string[] }> {
    return this.db.runTransaction(async (tx) => {
      const [snap, members] = await Promise.all([tx.get(this.ref(name)), tx.get(this.membersQuery(name))]);
      const pool = snap.exists ? this.parse(name, snap.data()) : undefined;
      const { writes, result } = decide(pool, this.parseMembers(members.docs));
      const created = this.write(tx, name, pool, writes, now);
      return { result, created };
    });
  }

  private write(tx: Transaction, name: string, pool: PoolDoc | undefined, writes: PoolWrites, now: number): string[] {
    if (!pool) return [];
    const created: string[] = [];
    for (const member of writes.create) {
      const proxy = memberName(name);
      created.push(proxy);
      const doc: ProxyDoc = {
        apiVersion: 'egress.dev/v1',
        kind: 'Proxy',
        metadata: { name: proxy, labels: { ...member.labels, [POOL_LABEL]: name } },
        spec: member.spec,
        generation: 1,
        requestTime: now,
        createdAt: iso(now),
        status: initialStatus(),
      };
      // `create` fails the transaction if the name was taken (a 1-in-60M collision): it is retried.
      tx.create(this.db.collection(COLLECTIONS.proxies).doc(proxy), doc);
      tx.set(this.db.collection(COLLECTIONS.credentials).doc(proxy), {
        ...generateCredentials(proxy),
        createdAt: iso(now),
      });
    }
    for (const proxy of writes.drain) {
      tx.update(this.db.collection(COLLECTIONS.proxies).doc(proxy), {
        deletionRequestedAt: iso(now),
        generation: FieldValue.increment(1),
      });
    }
    if (writes.finalise) {
      tx.delete(this.ref(name));
      tx.set(this.db.collection(COLLECTIONS.tombstones).doc(tombId(name)), {
        requestTime: pool.requestTime,
        at: iso(now),
      });
    } else if (writes.status) {
      tx.update(this.ref(name), { status: writes.status });
    }
    return created;
  }

  /** Appends to the pool's audit trail and keeps only the newest `keep` events. */
  addEvent(name: string, event: ProxyEvent, keep: number): Promise<void> {
    return appendEvent(this.db, this.ref(name).collection('events'), event, keep);
  }

  events(name: string, limit = 20): Promise<ProxyEvent[]> {
    return readEvents(this.ref(name).collection('events'), limit);
  }

  /** Removes the events of a finalised pool. */
  async removeEvents(name: string): Promise<void> {
    await this.db.recursiveDelete(this.ref(name).collection('events'));
  }
}
