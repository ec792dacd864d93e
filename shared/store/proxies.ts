/** The `proxies/{name}` repository: requests, fenced status writes, leases, credentials, events. */
import { randomBytes } from 'node:crypto';
import {
  FieldPath,
  FieldValue,
  type Firestore,
  type Precondition,
  type Timestamp,
  type WriteBatch,
} from '@google-cloud/firestore';
import { POOL_LABEL } from '../domain/pool.js';
import type { ApplyRequest } from '../domain/proxy.js';
import {
  initialStatus,
  PHASES,
  proxyDocSchema,
  REPORT_OWNED_FIELDS,
  type ProxyDoc,
  type ProxyStatus,
} from '../domain/status.js';
import { clip } from '../domain/text.js';
import { ValidationError, type ErrorInfo } from '../errors.js';
import type { Logger } from '../logger.js';
import { appendEvent, readEvents, trimEvents, type ProxyEvent } from './events.js';
import { COLLECTIONS, readAtOf } from './firestore.js';
import type { StoredProxy } from './ports.js';

export type ApplyOutcome = 'created' | 'updated' | 'unchanged' | 'stale';
export type DeleteOutcome = 'marked' | 'already' | 'absent' | 'stale';

export interface Credentials {
  username: string;
  password: string;
}

export type { ProxyEvent } from './events.js';
export type { StoredProxy } from './ports.js';

const iso = (ms: number) => new Date(ms).toISOString();
const FieldValueDelete = FieldValue.delete();
/** At most this many proxies' credentials are remembered per process (about 100 bytes each). */
const MAX_KNOWN_CREDENTIALS = 50_000;
/** Rejections carry `expireAt` too (see EVENT_RETENTION_MS). */
export const REJECTION_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** Fresh per-proxy credentials from a secure random source. */
export function generateCredentials(proxy: string): Credentials {
  return { username: `u-${proxy.slice(0, 20)}`, password: randomBytes(18).toString('base64url') };
}

/**
 * A pool's members are created and deleted only by their pool.
 *
 * @throws ValidationError on `metadata.name`, naming the pool
 */
export function refuseMember(doc: ProxyDoc): void {
  const pool = doc.metadata.labels[POOL_LABEL];
  if (pool !== undefined)
    throw new ValidationError(
      'metadata.name',
      `proxy "${doc.metadata.name}" is a member of pool "${pool}"; scale or change the pool instead`,
    );
}

export class ProxyStore {
  /** Credentials read with `reuse`, by proxy name with the incarnation they belong to, oldest first. */
  private readonly knownCredentials = new Map<string, { incarnation: string; credentials: Credentials }>();

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

  /**
   * One page of proxies in name order, after `after` (a sweep batch: one read per proxy).
   * `next` is the cursor for the following page, or null after the last one; corrupt documents
   * are skipped but still advance the cursor.
   */
  async page(after: string | null, limit: number): Promise<{ items: StoredProxy[]; next: string | null }> {
    let query = this.db.collection(COLLECTIONS.proxies).orderBy(FieldPath.documentId()).limit(limit);
    if (after) query = query.startAfter(after);
    const snap = await query.get();
    const items = snap.docs.flatMap((d) => this.stored(d.id, d.data(), d.updateTime) ?? []);
    return { items, next: snap.size === limit ? (snap.docs.at(-1)?.id ?? null) : null };
  }

  /** Names of other live proxies whose last probe saw `ip` as their egress IP (at most 20). */
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

  /** Proxies of `provider` currently in phase Replacing (the rollout budget; a count query). */
  async countReplacing(provider: string): Promise<number> {
    const snap = await this.db
      .collection(COLLECTIONS.proxies)
      .where('spec.provider', '==', provider)
      .where('status.phase', '==', 'Replacing')
      .count()
      .get();
    return snap.data().count;
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

  /** Names of every proxy document (GC's ownership check; reads ids only). */
  async names(): Promise<Set<string>> {
    const snap = await this.db.collection(COLLECTIONS.proxies).select().get();
    return new Set(snap.docs.map((d) => d.id));
  }

  /**
   * Records an apply request. Requests older than the newest one applied (or than a completed
   * delete) are stale and ignored, so redelivered and reordered messages converge.
   *
   * @throws ValidationError on `spec.provider` when it would change (immutable)
   */
  async apply(request: ApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome> {
    const name = request.metadata.name;
    if (request.metadata.labels[POOL_LABEL] !== undefined)
      throw new ValidationError(`metadata.labels.${POOL_LABEL}`, 'is set only by a pool on its members');
    return this.db.runTransaction(async (tx) => {
      const [snap, tomb, creds] = await Promise.all([
        tx.get(this.ref(name)),
        tx.get(this.db.collection(COLLECTIONS.tombstones).doc(name)),
        tx.get(this.db.collection(COLLECTIONS.credentials).doc(name)),
      ]);
      const tombAt = Number(tomb.get('requestTime') ?? 0);
      if (!snap.exists && publishTime <= tombAt) return 'stale';
      const existing = snap.exists ? this.parse(name, snap.data()) : undefined;
      if (existing) refuseMember(existing);
      if (existing && publishTime < existing.requestTime) return 'stale';
      if (existing && existing.spec.provider !== request.spec.provider) {
        throw new ValidationError(
          'spec.provider',
          `is immutable: proxy "${name}" uses provider "${existing.spec.provider}"; delete it first`,
        );
      }
      if (!creds.exists) tx.set(creds.ref, { ...generateCredentials(name), createdAt: iso(now) });
      if (!existing) {
        const doc: ProxyDoc = {
          apiVersion: 'egress.dev/v1',
          kind: 'Proxy',
          metadata: { name, labels: request.metadata.labels },
          spec: request.spec,
          generation: 1,
          requestTime: publishTime,
          createdAt: iso(now),
          status: initialStatus(),
        };
        tx.set(this.ref(name), doc);
        return 'created';
      }
      const specChanged = JSON.stringify(existing.spec) !== JSON.stringify(request.spec);
      const labelsChanged = JSON.stringify(existing.metadata.labels) !== JSON.stringify(request.metadata.labels);
      const undelete = existing.deletionRequestedAt !== undefined;
      if (!specChanged && !labelsChanged && !undelete) {
        if (publishTime > existing.requestTime) tx.update(this.ref(name), { requestTime: publishTime });
        return 'unchanged';
      }
      const update: Record<string, unknown> = {
        spec: request.spec,
        'metadata.labels': request.metadata.labels,
        requestTime: publishTime,
        generation: existing.generation + (specChanged || undelete ? 1 : 0),
      };
      if (undelete) update['deletionRequestedAt'] = FieldValueDelete;
      tx.update(this.ref(name), update);
      return 'updated';
    });
  }

  /** Marks a proxy for deletion (or leaves a tombstone when it does not exist yet). */
  async requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome> {
    return this.db.runTransaction(async (tx) => {
      const snap = await tx.get(this.ref(name));
      const tombRef = this.db.collection(COLLECTIONS.tombstones).doc(name);
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
      refuseMember(existing);
      if (publishTime < existing.requestTime) return 'stale';
      if (existing.deletionRequestedAt) {
        // Still the newest request: an apply published before it, arriving later, is stale.
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
   * Takes the short lease that must be held around a mutating provider call. Fails when another
   * worker holds a live lease, when the generation moved since the decision was made, or when the
   * proxy was written since `readAt` (the update time of the read the decision was made on):
   * another worker may have acted in between (taken the lease, created, released it), and the
   * decision's observation is then stale (it would create a second time).
   *
   * @param clock - read at each attempt: the lease runs `ttlMs` from the write that takes it, so a
   * slow acquisition (retried writes, a slow database) does not hand out a lease already spent
   * @returns when the lease taken runs out, or undefined when it was refused
   */
  async acquireLease(
    name: string,
    holder: string,
    generation: number,
    ttlMs: number,
    clock: () => number,
    readAt: string,
  ): Promise<number | undefined> {
    let until = 0;
    const taken = await this.writeIfUnchanged(name, (doc, updateTime) => {
      const now = clock();
      if (!doc || doc.generation !== generation) return undefined;
      if (!updateTime || readAtOf(updateTime) !== readAt) return undefined;
      if (doc.lease && doc.lease.holder !== holder && doc.lease.until > now) return undefined;
      until = now + ttlMs;
      return (batch, unchanged) => batch.update(this.ref(name), { lease: { holder, until, generation } }, unchanged);
    });
    return taken ? until : undefined;
  }

  /**
   * Writes a status computed for `generation`, fenced: discarded when the generation moved, when
   * another worker holds a live lease, or (with `holder`) when the lease is no longer `holder`'s.
   * Releases `holder`'s lease when given.
   *
   * @returns whether the write happened
   */
  async writeStatus(
    name: string,
    generation: number,
    status: ProxyStatus,
    now: number,
    holder?: string,
  ): Promise<boolean> {
    return this.writeIfUnchanged(name, (doc) => {
      if (!doc || doc.generation !== generation) return undefined;
      // A holder writes only while the lease is still its own: one that lost it (or was paused past
      // it while another took and released it) must not overwrite what was written since.
      if (holder !== undefined ? doc.lease?.holder !== holder : doc.lease && doc.lease.until > now) return undefined;
      // The report-owned fields are the stored ones: a report counted since the status was computed stays.
      const merged: Record<string, unknown> = { ...status };
      for (const field of REPORT_OWNED_FIELDS) {
        if (doc.status[field] === undefined) delete merged[field];
        else merged[field] = doc.status[field];
      }
      const update: Record<string, unknown> = { status: merged };
      if (doc.lease && (doc.lease.holder === holder || doc.lease.until <= now)) update['lease'] = FieldValueDelete;
      return (batch, unchanged) => batch.update(this.ref(name), update, unchanged);
    });
  }

  /**
   * Reads a proxy and commits the writes `change(doc)` queues only if the document did not change
   * in between (preconditioned on its update time; redone on a fresh read when it did); `change`
   * returning undefined means no write. No transaction, for the reason `RelayStore.applyReport`
   * has none: a transaction locks what it reads, and concurrent checks on one proxy would queue on
   * that lock.
   *
   * @returns whether the writes happened (false after `attempts` lost races)
   */
  private async writeIfUnchanged(
    name: string,
    change: (
      doc: ProxyDoc | undefined,
      updateTime: Timestamp | undefined,
    ) => ((batch: WriteBatch, unchanged: Precondition) => void) | undefined,
    attempts = 10,
  ): Promise<boolean> {
    for (let attempt = 0; attempt < attempts; attempt++) {
      const snap = await this.ref(name).get();
      const write = change(snap.exists ? this.parse(name, snap.data()) : undefined, snap.updateTime);
      if (!write || !snap.updateTime) return false;
      const batch = this.db.batch();
      write(batch, { lastUpdateTime: snap.updateTime });
      try {
        await batch.commit();
        return true;
      } catch (err) {
        // FAILED_PRECONDITION: written since it was read; decide again on what it is now.
        if (!(typeof err === 'object' && err !== null && 'code' in err && err.code === 9)) throw err;
      }
    }
    return false;
  }

  /**
   * Removes a deleted proxy once its instance is confirmed gone: the document, its credentials
   * and its events; leaves a tombstone so a late apply cannot resurrect it.
   */
  async finalise(name: string, generation: number): Promise<boolean> {
    const removed = await this.writeIfUnchanged(name, (doc) => {
      if (!doc || doc.generation !== generation || !doc.deletionRequestedAt) return undefined;
      return (batch, unchanged) => {
        batch.delete(this.ref(name), unchanged);
        batch.delete(this.db.collection(COLLECTIONS.credentials).doc(name));
        batch.set(this.db.collection(COLLECTIONS.tombstones).doc(name), {
          requestTime: doc.requestTime,
          at: new Date().toISOString(),
        });
      };
    });
    if (removed) await this.db.recursiveDelete(this.ref(name).collection('events'));
    return removed;
  }

  /**
   * A proxy's credentials. With `reuse`, credentials read before for the same incarnation of the
   * proxy (its document's `createdAt`) are returned without a read: `apply` writes them once per
   * document and `finalise` removes them with it, so a probe costs no read on every check.
   *
   * @param reuse - `{incarnation}`: reuse a previous read; `{incarnation, fresh: true}`: read and remember
   */
  async credentials(name: string, reuse?: { incarnation: string; fresh?: boolean }): Promise<Credentials | undefined> {
    const known = this.knownCredentials.get(name);
    if (reuse && !reuse.fresh && known?.incarnation === reuse.incarnation) return known.credentials;
    const snap = await this.db.collection(COLLECTIONS.credentials).doc(name).get();
    const username: unknown = snap.get('username');
    const password: unknown = snap.get('password');
    const credentials =
      typeof username === 'string' && typeof password === 'string' ? { username, password } : undefined;
    if (reuse && credentials) {
      this.knownCredentials.delete(name);
      if (this.knownCredentials.size >= MAX_KNOWN_CREDENTIALS) {
        const oldest = this.knownCredentials.keys().next();
        if (!oldest.done) this.knownCredentials.delete(oldest.value);
      }
      this.knownCredentials.set(name, { incarnation: reuse.incarnation, credentials });
    }
    return credentials;
  }

  /** Forgets a proxy's remembered credentials (a probe with them failed: read them again next time). */
  forgetCredentials(name: string): void {
    this.knownCredentials.delete(name);
  }

  /** Appends to the proxy's audit trail and keeps only the newest `keep` events. */
  addEvent(name: string, event: ProxyEvent, keep: number): Promise<void> {
    return appendEvent(this.db, this.ref(name).collection('events'), event, keep);
  }

  /** Keeps only the newest `keep` events of a proxy. */
  trimEvents(name: string, keep: number): Promise<void> {
    return trimEvents(this.db, this.ref(name).collection('events'), keep);
  }

  events(name: string, limit = 20): Promise<ProxyEvent[]> {
    return readEvents(this.ref(name).collection('events'), limit);
  }

  /** Records a request that failed validation, for its sender (`rejections/{messageId}`). */
  async reject(messageId: string, error: ErrorInfo, raw: string, topic: string, now: number): Promise<void> {
    await this.db
      .collection(COLLECTIONS.rejections)
      .doc(messageId || `unknown-${now}`)
      .set({
        at: iso(now),
        topic,
        // What the sender wrote, echoed: bounded and valid Unicode, or the write itself would fail.
        field: error.field === undefined ? null : clip(error.field, 512),
        reason: clip(error.message, 2048),
        code: error.code,
        data: clip(raw, 4096),
        expireAt: new Date(now + REJECTION_RETENTION_MS),
      });
  }
}
