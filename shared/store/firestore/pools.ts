/** The `pools/{name}` repository: pool requests, the members' query, and the reconcile transaction. */
import { FieldPath, FieldValue, type Firestore, type Transaction } from '@google-cloud/firestore';
import { POOL_LABEL, type PoolApplyRequest } from '../../domain/pool.js';
import { poolDocSchema, type PoolDoc } from '../../domain/pool-status.js';
import { proxyDocSchema, type ProxyDoc } from '../../domain/status.js';
import type { Logger } from '../../logger.js';
import { generateCredentials } from '../credentials-memo.js';
import { abortIfClosed } from '../grpc-codes.js';
import { changeStamp, COLLECTIONS } from './client.js';
import type { ProxyEvent } from '../records.js';
import { appendEvent, readEvents } from './events.js';
import type { PoolRepository, PoolWrites } from '../ports.js';
import { memberDocs, poolApplyStep, poolTombId } from '../pool-rules.js';
import { orderDelete, type ApplyOutcome, type DeleteOutcome } from '../proxy-rules.js';
import { runTransaction } from './transaction.js';

const iso = (ms: number) => new Date(ms).toISOString();

export class FirestorePoolRepository implements PoolRepository {
  constructor(
    private readonly db: Firestore,
    private readonly logger: Logger,
  ) {}

  private ref(name: string) {
    return this.db.collection(COLLECTIONS.pools).doc(name);
  }

  private tombRef(name: string) {
    return this.db.collection(COLLECTIONS.tombstones).doc(poolTombId(name));
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

  /** Records a pool apply (pool-rules.ts#poolApplyStep: ordered as proxies' are). */
  async apply(request: PoolApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome> {
    const name = request.metadata.name;
    return runTransaction(this.db, this.logger, { kind: 'pool-apply' }, async (tx) => {
      const [snap, tomb] = await abortIfClosed(Promise.all([tx.get(this.ref(name)), tx.get(this.tombRef(name))]));
      const existing = snap.exists ? this.parse(name, snap.data()) : undefined;
      const tombAt = snap.exists ? 0 : Number(tomb.get('requestTime') ?? 0);
      const step = poolApplyStep(existing, tombAt, request, publishTime, now);
      if (step.outcome === 'created') tx.set(this.ref(name), step.doc);
      if (step.outcome === 'unchanged' && step.requestTime !== undefined)
        tx.update(this.ref(name), { requestTime: step.requestTime });
      if (step.outcome === 'updated')
        tx.update(this.ref(name), {
          spec: request.spec,
          'metadata.labels': request.metadata.labels,
          requestTime: step.requestTime,
          generation: step.generation,
          deletionRequestedAt: FieldValue.delete(),
        });
      return step.outcome;
    });
  }

  /** Marks a pool for deletion (its reconcile then drains every member), or leaves a tombstone (proxy-rules.ts#orderDelete). */
  async requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome> {
    return runTransaction(this.db, this.logger, { kind: 'pool-delete' }, async (tx) => {
      const snap = await tx.get(this.ref(name));
      const existing = snap.exists ? this.parse(name, snap.data()) : undefined;
      if (snap.exists && !existing) {
        tx.delete(this.ref(name));
        return 'absent';
      }
      const tomb = existing ? undefined : await tx.get(this.tombRef(name));
      const step = orderDelete(existing, Number(tomb?.get('requestTime') ?? 0), publishTime, now);
      if (step.outcome === 'absent' && step.tombstone)
        tx.set(this.tombRef(name), { requestTime: publishTime, at: iso(now) });
      if (step.outcome === 'already' && step.requestTime !== undefined)
        tx.update(this.ref(name), { requestTime: step.requestTime });
      if (step.outcome === 'marked') tx.update(this.ref(name), step.patch);
      return step.outcome;
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
    clock: () => number,
    decide: (pool: PoolDoc | undefined, members: ProxyDoc[], now: number) => { writes: PoolWrites; result: T },
  ): Promise<{ result: T; created: string[] }> {
    return runTransaction(this.db, this.logger, { kind: 'pool-reconcile' }, async (tx) => {
      const now = clock();
      const [snap, members] = await abortIfClosed(
        Promise.all([tx.get(this.ref(name)), tx.get(this.membersQuery(name))]),
      );
      const pool = snap.exists ? this.parse(name, snap.data()) : undefined;
      const { writes, result } = decide(pool, this.parseMembers(members.docs), now);
      const created = this.write(tx, name, pool, writes, now);
      return { result, created };
    });
  }

  private write(tx: Transaction, name: string, pool: PoolDoc | undefined, writes: PoolWrites, now: number): string[] {
    if (!pool) return [];
    const members = memberDocs(name, writes.create, now);
    for (const doc of members) {
      const proxy = doc.metadata.name;
      // `create` fails the transaction if the name was taken (a 1-in-60M collision): it is retried.
      tx.create(this.db.collection(COLLECTIONS.proxies).doc(proxy), { ...doc, ...changeStamp() });
      tx.set(this.db.collection(COLLECTIONS.credentials).doc(proxy), {
        ...generateCredentials(proxy),
        createdAt: iso(now),
      });
    }
    for (const proxy of writes.drain) {
      tx.update(this.db.collection(COLLECTIONS.proxies).doc(proxy), {
        deletionRequestedAt: iso(now),
        generation: FieldValue.increment(1),
        ...changeStamp(),
      });
    }
    if (writes.finalise) {
      tx.delete(this.ref(name));
      tx.set(this.tombRef(name), { requestTime: pool.requestTime, at: iso(now) });
    } else if (writes.status) {
      tx.update(this.ref(name), { status: writes.status });
    }
    return members.map((doc) => doc.metadata.name);
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
