/** The `proxies/{name}` repository on Firestore: the rules in proxy-rules.ts, read and written transactionally or preconditioned. */
import { FieldPath, FieldValue, type Firestore, type Timestamp } from '@google-cloud/firestore';
import { POOL_LABEL } from '../../domain/names.js';
import type { ApplyRequest } from '../../domain/proxy.js';
import { PHASES, proxyDocSchema, type ProxyDoc, type ProxyStatus } from '../../domain/status.js';
import type { ErrorInfo } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { changedInRange } from './changes-query.js';
import { CredentialsMemo, credentialsThrough, generateCredentials } from '../credentials-memo.js';
import type { ProxyEvent } from '../records.js';
import { appendEvent, readEvents, trimEvents } from './events.js';
import { abortIfClosed } from '../grpc-codes.js';
import { changeStamp, COLLECTIONS, readAtOf, updateTimeOf } from './client.js';
import type { Credentials, PageChanges, ProxyPage, ProxyRepository, RolloutCounts, StoredProxy } from '../ports.js';
import {
  applyStep,
  deleteStep,
  leaseStep,
  mayFinalise,
  rejectionRecord,
  refusePoolLabel,
  statusStep,
  type ApplyOutcome,
  type DeleteOutcome,
} from '../proxy-rules.js';
import { writeIfUnchanged, type QueuedWrite } from './write-if-unchanged.js';
import { runTransaction } from './transaction.js';

const iso = (ms: number) => new Date(ms).toISOString();

export class FirestoreProxyRepository implements ProxyRepository {
  private readonly memo = new CredentialsMemo();

  constructor(
    private readonly db: Firestore,
    private readonly logger: Logger,
  ) {}

  private ref(name: string) {
    return this.db.collection(COLLECTIONS.proxies).doc(name);
  }

  /** Parses a stored document; a corrupt one is logged and treated as absent (never crashes a sweep). */
  private parse(name: string, data: unknown): ProxyDoc | undefined {
    const parsed = proxyDocSchema.safeParse(data);
    if (parsed.success) return parsed.data;
    this.logger.error('corrupt proxy document ignored', {
      proxy: name,
      issue: parsed.error.issues[0]?.message,
      path: parsed.error.issues[0]?.path.join('.'),
    });
    return undefined;
  }

  /** A stored document with the update time it was read at; undefined when absent or corrupt. */
  private stored(name: string, data: unknown, updateTime: Timestamp | undefined): StoredProxy | undefined {
    const doc = this.parse(name, data);
    return doc && updateTime ? { doc, readAt: readAtOf(updateTime) } : undefined;
  }

  async get(name: string): Promise<StoredProxy | undefined> {
    const snap = await this.ref(name).get();
    return snap.exists ? this.stored(name, snap.data(), snap.updateTime) : undefined;
  }

  /** A sweep batch (one read per proxy); corrupt documents are skipped but still advance the cursor. */
  async page(after: string | null, limit: number): Promise<ProxyPage> {
    let query = this.db.collection(COLLECTIONS.proxies).orderBy(FieldPath.documentId()).limit(limit);
    if (after) query = query.startAfter(after);
    const snap = await query.get();
    const items = snap.docs.flatMap((d) => this.stored(d.id, d.data(), d.updateTime) ?? []);
    const next = snap.size === limit ? (snap.docs.at(-1)?.id ?? null) : null;
    return { items, next, readTime: snap.readTime.toMillis() };
  }

  /** A name range's changes since `since` and its document count (`changes-query.ts`). */
  async changes(after: string | null, through: string | null, since: number): Promise<PageChanges> {
    const { docs, count, readTime } = await changedInRange(this.db, after, through, since);
    return { changed: docs.flatMap((d) => this.stored(d.id, d.data(), d.updateTime) ?? []), count, readTime };
  }

  async readyInPool(pool: string, limit: number): Promise<StoredProxy[]> {
    // Two equalities: served by merging the single-field indexes (infra/terraform/firestore-indexes.ts).
    const snap = await this.db
      .collection(COLLECTIONS.proxies)
      .where(new FieldPath('metadata', 'labels', POOL_LABEL), '==', pool)
      .where('status.phase', '==', 'Ready')
      .limit(limit)
      .get();
    return snap.docs.flatMap((d) => this.stored(d.id, d.data(), d.updateTime) ?? []);
  }

  async sharingEgressIp(ip: string, except: string): Promise<string[]> {
    const snap = await this.db
      .collection(COLLECTIONS.proxies)
      .where('status.health.egressIp', '==', ip)
      .select('deletionRequestedAt')
      .limit(21)
      .get();
    return snap.docs.filter((d) => d.id !== except && !d.get('deletionRequestedAt')).map((d) => d.id);
  }

  /** Every proxy, in name order (the API's listings; pages of 500 reads). */
  async list(): Promise<ProxyDoc[]> {
    const all: ProxyDoc[] = [];
    let after: string | null = null;
    do {
      const page = await this.page(after, 500);
      all.push(...page.items.map((item) => item.doc));
      after = page.next;
    } while (after);
    return all;
  }

  async rolloutCounts(provider: string): Promise<RolloutCounts> {
    const ofProvider = this.db.collection(COLLECTIONS.proxies).where('spec.provider', '==', provider);
    const [replacing, proxies] = await Promise.all([
      ofProvider.where('status.phase', '==', 'Replacing').count().get(),
      ofProvider.count().get(),
    ]);
    return { replacing: replacing.data().count, proxies: proxies.data().count };
  }

  /** How many proxies are in each phase (one count query per phase; the `egress.proxies` metric). */
  async countByPhase(): Promise<Record<string, number>> {
    const counts = await Promise.all(
      PHASES.map(async (phase) => {
        const snap = await this.db.collection(COLLECTIONS.proxies).where('status.phase', '==', phase).count().get();
        const count: number = snap.data().count;
        return [phase, count] as const;
      }),
    );
    return Object.fromEntries(counts);
  }

  async names(): Promise<Set<string>> {
    const snap = await this.db.collection(COLLECTIONS.proxies).select().get();
    return new Set(snap.docs.map((d) => d.id));
  }

  /** Records an apply request (proxy-rules.ts#applyStep), in a transaction with its tombstone and credentials. */
  async apply(request: ApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome> {
    const name = request.metadata.name;
    refusePoolLabel(request);
    return runTransaction(this.db, this.logger, { kind: 'apply' }, async (tx) => {
      const [snap, tomb, creds] = await abortIfClosed(
        Promise.all([
          tx.get(this.ref(name)),
          tx.get(this.db.collection(COLLECTIONS.tombstones).doc(name)),
          tx.get(this.db.collection(COLLECTIONS.credentials).doc(name)),
        ]),
      );
      const existing = snap.exists ? this.parse(name, snap.data()) : undefined;
      // A tombstone counts only while no document exists (a corrupt one is overwritten).
      const tombAt = snap.exists ? 0 : Number(tomb.get('requestTime') ?? 0);
      const step = applyStep(existing, tombAt, request, publishTime, now);
      if (step.outcome === 'stale') return step.outcome;
      if (!creds.exists) tx.set(creds.ref, { ...generateCredentials(name), createdAt: iso(now) });
      if (step.outcome === 'created') tx.set(this.ref(name), { ...step.doc, ...changeStamp() });
      if (step.outcome === 'unchanged' && step.requestTime !== undefined)
        tx.update(this.ref(name), { requestTime: step.requestTime, ...changeStamp() });
      if (step.outcome === 'updated') {
        const { labels, ...fields } = step.patch;
        const update: Record<string, unknown> = { ...fields, 'metadata.labels': labels, ...changeStamp() };
        if (step.undelete) update['deletionRequestedAt'] = FieldValue.delete();
        tx.update(this.ref(name), update);
      }
      return step.outcome;
    });
  }

  /** Marks a proxy for deletion, or leaves a tombstone when it does not exist yet (proxy-rules.ts#deleteStep). */
  async requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome> {
    return runTransaction(this.db, this.logger, { kind: 'delete' }, async (tx) => {
      const snap = await tx.get(this.ref(name));
      const tombRef = this.db.collection(COLLECTIONS.tombstones).doc(name);
      const existing = snap.exists ? this.parse(name, snap.data()) : undefined;
      if (snap.exists && !existing) {
        tx.delete(this.ref(name));
        return 'absent';
      }
      const tomb = existing ? undefined : await tx.get(tombRef);
      const step = deleteStep(existing, Number(tomb?.get('requestTime') ?? 0), publishTime, now);
      if (step.outcome === 'absent' && step.tombstone) tx.set(tombRef, { requestTime: publishTime, at: iso(now) });
      if (step.outcome === 'already' && step.requestTime !== undefined)
        tx.update(this.ref(name), { requestTime: step.requestTime, ...changeStamp() });
      if (step.outcome === 'marked') tx.update(this.ref(name), { ...step.patch, ...changeStamp() });
      return step.outcome;
    });
  }

  /** Takes the lease held around a mutating provider call (proxy-rules.ts#leaseStep), preconditioned. */
  async acquireLease(
    name: string,
    holder: string,
    generation: number,
    ttlMs: number,
    clock: () => number,
    readAt: string,
    credentials?: Credentials,
    asRead?: ProxyDoc,
  ): Promise<number | undefined> {
    let until = 0;
    const taken = await this.writeIfUnchanged(
      name,
      (doc, updateTime) => {
        const now = clock();
        const lease = leaseStep(doc, updateTime && readAtOf(updateTime), { holder, generation, ttlMs, readAt }, now);
        if (!lease) return undefined;
        until = lease.until;
        return (batch, unchanged) => {
          batch.update(this.ref(name), { lease, ...changeStamp() }, unchanged);
          // In the batch the lease's precondition guards: refused lease, unchanged credentials.
          if (credentials)
            batch.set(this.db.collection(COLLECTIONS.credentials).doc(name), { ...credentials, createdAt: iso(now) });
        };
      },
      undefined,
      asRead && { doc: asRead, readAt },
    );
    return taken ? until : undefined;
  }

  /** Writes a status computed for `generation`, fenced (proxy-rules.ts#statusStep), preconditioned. */
  async writeStatus(
    name: string,
    generation: number,
    status: ProxyStatus,
    now: number,
    holder?: string,
    basis?: StoredProxy,
  ): Promise<boolean> {
    return this.writeIfUnchanged(
      name,
      (doc) => {
        const step = statusStep(doc, generation, status, now, holder);
        if (!step) return undefined;
        const update: Record<string, unknown> = { status: step.status, ...changeStamp() };
        if (step.releaseLease) update['lease'] = FieldValue.delete();
        return (batch, unchanged) => batch.update(this.ref(name), update, unchanged);
      },
      10,
      basis,
    );
  }

  /**
   * write-if-unchanged.ts on this proxy's document.
   *
   * @param basis - the document as read, tried before any read (its write preconditioned on `readAt`)
   */
  private writeIfUnchanged(
    name: string,
    change: (doc: ProxyDoc | undefined, updateTime: Timestamp | undefined) => QueuedWrite | undefined,
    attempts?: number,
    basis?: StoredProxy,
  ): Promise<boolean> {
    const updateTime = basis && updateTimeOf(basis.readAt);
    const first = basis && updateTime ? { doc: basis.doc, updateTime } : undefined;
    return writeIfUnchanged(this.db, this.ref(name), (data) => this.parse(name, data), change, attempts, first);
  }

  /** Removes a deleted proxy: document, credentials, then events; the tombstone stops a late apply. */
  async finalise(name: string, generation: number): Promise<boolean> {
    const removed = await this.writeIfUnchanged(name, (doc) => {
      if (!mayFinalise(doc, generation)) return undefined;
      return (batch, unchanged) => {
        batch.delete(this.ref(name), unchanged);
        batch.delete(this.db.collection(COLLECTIONS.credentials).doc(name));
        const tombstone = { requestTime: doc.requestTime, at: new Date().toISOString() };
        batch.set(this.db.collection(COLLECTIONS.tombstones).doc(name), tombstone);
      };
    });
    if (removed) await this.db.recursiveDelete(this.ref(name).collection('events'));
    return removed;
  }

  /** A proxy's credentials (with `reuse`, remembered per incarnation: credentials-memo.ts). */
  credentials(name: string, reuse?: { incarnation: string; fresh?: boolean }): Promise<Credentials | undefined> {
    return credentialsThrough(this.memo, name, reuse, async () => {
      const snap = await this.db.collection(COLLECTIONS.credentials).doc(name).get();
      const username: unknown = snap.get('username');
      const password: unknown = snap.get('password');
      return typeof username === 'string' && typeof password === 'string' ? { username, password } : undefined;
    });
  }

  forgetCredentials(name: string): void {
    this.memo.forget(name);
  }

  addEvent(name: string, event: ProxyEvent, keep: number): Promise<void> {
    return appendEvent(this.db, this.ref(name).collection('events'), event, keep);
  }

  trimEvents(name: string, keep: number): Promise<void> {
    return trimEvents(this.db, this.ref(name).collection('events'), keep);
  }

  events(name: string, limit = 20): Promise<ProxyEvent[]> {
    return readEvents(this.ref(name).collection('events'), limit);
  }

  async reject(messageId: string, error: ErrorInfo, raw: string, topic: string, now: number): Promise<void> {
    await this.db
      .collection(COLLECTIONS.rejections)
      .doc(messageId || `unknown-${now}`)
      .set(rejectionRecord(error, raw, topic, now));
  }
}
