/**
 * The `proxies/{name}` repository in memory: the rules of proxy-rules.ts (the same functions the
 * Firestore one calls), optimistic commits that hold only if nothing read changed, and update times
 * from a Clock. Documents are copied in and out: a caller's copy is never the stored one.
 */
import { POOL_LABEL } from '../../domain/names.js';
import type { ApplyRequest } from '../../domain/proxy.js';
import { PHASES, proxyDocSchema, type ProxyDoc, type ProxyStatus } from '../../domain/status.js';
import type { ErrorInfo } from '../../errors.js';
import { CredentialsMemo, credentialsThrough, generateCredentials } from '../credentials-memo.js';
import { EVENT_RETENTION_MS, type ProxyEvent } from '../records.js';
import { updateTimeText } from '../clock.js';
import type {
  Clock,
  Credentials,
  PageChanges,
  ProxyPage,
  ProxyRepository,
  RolloutCounts,
  StoredProxy,
} from '../ports.js';
import {
  applyStep,
  deleteStep,
  leaseStep,
  mayFinalise,
  refusePoolLabel,
  rejectionRecord,
  statusStep,
  type ApplyOutcome,
  type DeleteOutcome,
} from '../proxy-rules.js';
import { transaction, TransactionAborted } from './optimistic.js';
import { byName, MemoryState, newestFirst, plainEvent, type Row, type StoredEvent } from './state.js';

const iso = (ms: number) => new Date(ms).toISOString();
/** As many attempts as the Firestore repository's preconditioned writes make. */
const WRITE_ATTEMPTS = 10;

export class MemoryProxyRepository implements ProxyRepository {
  private readonly rows: Map<string, Row<ProxyDoc>>;
  private readonly tombstones: MemoryState['tombstones'];
  private readonly secrets: MemoryState['secrets'];
  private readonly trails: Map<string, StoredEvent[]>;
  /** Requests that failed validation, by message id (what `rejections/{messageId}` holds). */
  readonly rejections = new Map<string, ReturnType<typeof rejectionRecord>>();
  private readonly memo = new CredentialsMemo();

  /** @param state - the database shared with the other memory repositories (a new one by default) */
  constructor(
    private readonly clock: Clock,
    private readonly state = new MemoryState(clock),
  ) {
    this.rows = state.proxies;
    this.tombstones = state.tombstones;
    this.secrets = state.secrets;
    this.trails = state.proxyEvents;
  }

  private write(name: string, doc: ProxyDoc): void {
    this.rows.set(name, this.state.row(doc));
  }

  private stored(row: Row<ProxyDoc>): StoredProxy {
    return { doc: proxyDocSchema.parse(structuredClone(row.doc)), readAt: row.updatedAt };
  }

  private sorted(): [string, Row<ProxyDoc>][] {
    return byName(this.rows);
  }

  get(name: string): Promise<StoredProxy | undefined> {
    const row = this.rows.get(name);
    return Promise.resolve(row && this.stored(row));
  }

  page(after: string | null, limit: number): Promise<ProxyPage> {
    const readTime = this.clock.now();
    const rows = this.sorted().filter(([name]) => after === null || name > after);
    const items = rows.slice(0, limit).map(([, row]) => this.stored(row));
    const next = items.length === limit ? (items.at(-1)?.doc.metadata.name ?? null) : null;
    return Promise.resolve({ items, next, readTime });
  }

  readyInPool(pool: string, limit: number): Promise<StoredProxy[]> {
    const rows = this.sorted().filter(
      ([, row]) => row.doc.metadata.labels[POOL_LABEL] === pool && row.doc.status.phase === 'Ready',
    );
    return Promise.resolve(rows.slice(0, limit).map(([, row]) => this.stored(row)));
  }

  /** A row's update time is its `changedAt`: every write replaces the row (state.ts). */
  changes(after: string | null, through: string | null, since: number): Promise<PageChanges> {
    const readTime = this.clock.now();
    const from = updateTimeText(Math.floor(since / 1000), (since % 1000) * 1_000_000);
    const rows = this.sorted().filter(
      ([name]) => (after === null || name > after) && (through === null || name <= through),
    );
    const changed = rows.filter(([, row]) => row.updatedAt >= from).map(([, row]) => this.stored(row));
    return Promise.resolve({ changed, count: rows.length, readTime });
  }

  list(): Promise<ProxyDoc[]> {
    return Promise.resolve(this.sorted().map(([, row]) => this.stored(row).doc));
  }

  sharingEgressIp(ip: string, except: string): Promise<string[]> {
    const sharing = this.sorted()
      .filter(([, row]) => row.doc.status.health?.egressIp === ip)
      .slice(0, 21);
    const names = sharing.filter(([name, row]) => name !== except && !row.doc.deletionRequestedAt);
    return Promise.resolve(names.map(([name]) => name));
  }

  rolloutCounts(provider: string): Promise<RolloutCounts> {
    const docs = [...this.rows.values()].map((row) => row.doc).filter((d) => d.spec.provider === provider);
    return Promise.resolve({
      replacing: docs.filter((d) => d.status.phase === 'Replacing').length,
      proxies: docs.length,
    });
  }

  countByPhase(): Promise<Record<string, number>> {
    const docs = [...this.rows.values()].map((row) => row.doc);
    return Promise.resolve(Object.fromEntries(PHASES.map((p) => [p, docs.filter((d) => d.status.phase === p).length])));
  }

  names(): Promise<Set<string>> {
    return Promise.resolve(new Set(this.rows.keys()));
  }

  /** The identities an apply or delete reads: document, tombstone, credentials. */
  private reads(name: string): unknown[] {
    return [this.rows.get(name), this.tombstones.get(name), this.secrets.get(name)];
  }

  async apply(request: ApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome> {
    const name = request.metadata.name;
    refusePoolLabel(request);
    return transaction(
      () => {
        const seen = this.reads(name);
        const existing = this.rows.get(name)?.doc;
        const tombAt = existing ? 0 : (this.tombstones.get(name)?.requestTime ?? 0);
        const step = applyStep(existing && structuredClone(existing), tombAt, request, publishTime, now);
        const commit = (): ApplyOutcome => {
          if (step.outcome === 'stale') return step.outcome;
          if (!this.secrets.has(name)) this.secrets.set(name, { ...generateCredentials(name), createdAt: iso(now) });
          if (step.outcome === 'created') this.write(name, step.doc);
          if (existing && step.outcome === 'unchanged' && step.requestTime !== undefined)
            this.write(name, { ...existing, requestTime: step.requestTime });
          if (existing && step.outcome === 'updated') {
            const { labels, ...fields } = step.patch;
            const doc: ProxyDoc = { ...existing, ...fields, metadata: { ...existing.metadata, labels } };
            if (step.undelete) delete doc.deletionRequestedAt;
            this.write(name, doc);
          }
          return step.outcome;
        };
        return { seen, commit };
      },
      () => this.reads(name),
    );
  }

  async requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome> {
    return transaction(
      () => {
        const seen = this.reads(name);
        const existing = this.rows.get(name)?.doc;
        const tombAt = this.tombstones.get(name)?.requestTime ?? 0;
        const step = deleteStep(existing && structuredClone(existing), tombAt, publishTime, now);
        const commit = (): DeleteOutcome => {
          if (step.outcome === 'absent' && step.tombstone)
            this.tombstones.set(name, { requestTime: publishTime, at: iso(now) });
          if (existing && step.outcome === 'already' && step.requestTime !== undefined)
            this.write(name, { ...existing, requestTime: step.requestTime });
          if (existing && step.outcome === 'marked') this.write(name, { ...existing, ...step.patch });
          return step.outcome;
        };
        return { seen, commit };
      },
      () => this.reads(name),
    );
  }

  /**
   * Commits what `change(doc, updatedAt)` returns only if the document was not written in between
   * (decided again on a fresh read when it was), as the Firestore repository's preconditioned writes.
   *
   * @returns whether the write happened (false when `change` declined or after every lost race)
   */
  private async writeIfUnchanged(
    name: string,
    change: (doc: ProxyDoc | undefined, updatedAt: string | undefined) => ((doc: ProxyDoc) => void) | undefined,
  ): Promise<boolean> {
    try {
      return await transaction(
        () => {
          const row = this.rows.get(name);
          const write = change(row && structuredClone(row.doc), row?.updatedAt);
          return { seen: [row], commit: () => (row && write ? (write(structuredClone(row.doc)), true) : false) };
        },
        () => [this.rows.get(name)],
        WRITE_ATTEMPTS,
      );
    } catch (err) {
      if (err instanceof TransactionAborted) return false;
      throw err;
    }
  }

  async acquireLease(
    name: string,
    holder: string,
    generation: number,
    ttlMs: number,
    clock: () => number,
    readAt: string,
    credentials?: Credentials,
  ): Promise<number | undefined> {
    let until = 0;
    const taken = await this.writeIfUnchanged(name, (doc, updatedAt) => {
      const now = clock();
      const lease = leaseStep(doc, updatedAt, { holder, generation, ttlMs, readAt }, now);
      if (!lease) return undefined;
      until = lease.until;
      return (current) => {
        this.write(name, { ...current, lease });
        if (credentials) this.secrets.set(name, { ...credentials, createdAt: iso(now) });
      };
    });
    return taken ? until : undefined;
  }

  /** `basis` saves a billed read in Firestore; here reads are free, so it decides on the current row. */
  writeStatus(
    name: string,
    generation: number,
    status: ProxyStatus,
    now: number,
    holder?: string,
    _basis?: StoredProxy,
  ): Promise<boolean> {
    return this.writeIfUnchanged(name, (doc) => {
      const step = statusStep(doc, generation, status, now, holder);
      if (!step) return undefined;
      return (current) => {
        const next: ProxyDoc = { ...current, status: structuredClone(step.status) };
        if (step.releaseLease) delete next.lease;
        this.write(name, next);
      };
    });
  }

  finalise(name: string, generation: number): Promise<boolean> {
    return this.writeIfUnchanged(name, (doc) => {
      if (!mayFinalise(doc, generation)) return undefined;
      return () => {
        this.rows.delete(name);
        this.secrets.delete(name);
        this.trails.delete(name);
        this.tombstones.set(name, { requestTime: doc.requestTime, at: iso(this.clock.now()) });
      };
    });
  }

  credentials(name: string, reuse?: { incarnation: string; fresh?: boolean }): Promise<Credentials | undefined> {
    return credentialsThrough(this.memo, name, reuse, () => {
      const secret = this.secrets.get(name);
      return Promise.resolve(secret && { username: secret.username, password: secret.password });
    });
  }

  forgetCredentials(name: string): void {
    this.memo.forget(name);
  }

  private trail(name: string): StoredEvent[] {
    return newestFirst(this.trails.get(name));
  }

  events(name: string, limit = 20): Promise<ProxyEvent[]> {
    return Promise.resolve(this.trail(name).slice(0, limit).map(plainEvent));
  }

  addEvent(name: string, event: ProxyEvent, keep: number): Promise<void> {
    const expireAt = new Date(Date.parse(event.at) + EVENT_RETENTION_MS);
    this.trails.set(name, [...(this.trails.get(name) ?? []), { ...event, expireAt }]);
    return this.trimEvents(name, keep);
  }

  trimEvents(name: string, keep: number): Promise<void> {
    if (this.trails.has(name)) this.trails.set(name, this.trail(name).slice(0, keep));
    return Promise.resolve();
  }

  reject(messageId: string, error: ErrorInfo, raw: string, topic: string, now: number): Promise<void> {
    this.rejections.set(messageId || `unknown-${now}`, rejectionRecord(error, raw, topic, now));
    return Promise.resolve();
  }
}
