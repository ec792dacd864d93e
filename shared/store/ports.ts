/**
 * The store's ports: what the functions need from state, each implemented on Firestore
 * (`shared/store/*.ts`) and in memory (`shared/store/memory/`), both held to one contract suite
 * (test/store/contract.case.ts).
 */
import type { ApplyRequest } from '../domain/proxy.js';
import type { ProxyDoc, ProxyStatus } from '../domain/status.js';
import type { ErrorInfo } from '../errors.js';
import type { ProxyEvent } from './events.js';
import type { ApplyOutcome, DeleteOutcome } from './proxy-rules.js';

/**
 * A proxy document as read, with the update time it had then (`readAt`, an RFC 3339 timestamp with
 * nanoseconds): the basis of a decision. A fenced write given `readAt` is refused when the document
 * was written since, whatever copy of the document the caller holds.
 */
export interface StoredProxy {
  doc: ProxyDoc;
  readAt: string;
}

export interface Credentials {
  username: string;
  password: string;
}

/** Wall-clock milliseconds: `systemClock` in production, a `ManualClock` in tests. */
export interface Clock {
  now(): number;
}

/** The `proxies/{name}` repository: requests, fenced status writes, leases, credentials, events. */
export interface ProxyRepository {
  /** One proxy as read; undefined when absent (or corrupt: logged, never crashes a sweep). */
  get(name: string): Promise<StoredProxy | undefined>;
  /** One page in name order after `after`; `next` is the following page's cursor, or null after the last. */
  page(after: string | null, limit: number): Promise<{ items: StoredProxy[]; next: string | null }>;
  /** Every proxy, in name order (listings; never the basis of a fenced write). */
  list(): Promise<ProxyDoc[]>;
  /** Names of other live proxies whose last probe saw `ip` as their egress IP (at most 20). */
  sharingEgressIp(ip: string, except: string): Promise<string[]>;
  /** Proxies of `provider` in phase Replacing (the rollout budget). */
  countReplacing(provider: string): Promise<number>;
  /** How many proxies are in each phase (every phase present). */
  countByPhase(): Promise<Record<string, number>>;
  /** Names of every proxy document (GC's ownership check). */
  names(): Promise<Set<string>>;
  /**
   * Records an apply request, ordered by `publishTime` (see proxy-rules.ts#applyStep).
   *
   * @throws ValidationError on `spec.provider` (immutable), the pool label, or a pool member
   */
  apply(request: ApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome>;
  /** Marks a proxy for deletion, or leaves a tombstone when it does not exist yet. */
  requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome>;
  /**
   * Takes the lease held around a mutating provider call (see proxy-rules.ts#leaseStep).
   *
   * @param clock - read at each attempt: the lease runs `ttlMs` from the write that takes it
   * @param readAt - the update time of the read the decision was made on
   * @returns when the lease taken runs out, or undefined when it was refused
   */
  acquireLease(
    name: string,
    holder: string,
    generation: number,
    ttlMs: number,
    clock: () => number,
    readAt: string,
  ): Promise<number | undefined>;
  /**
   * Writes a status computed for `generation`, fenced (see proxy-rules.ts#statusStep); releases
   * `holder`'s lease when given.
   *
   * @returns whether the write happened
   */
  writeStatus(name: string, generation: number, status: ProxyStatus, now: number, holder?: string): Promise<boolean>;
  /** Removes a deleted proxy (document, credentials, events), leaving a tombstone. */
  finalise(name: string, generation: number): Promise<boolean>;
  /**
   * A proxy's credentials; with `reuse`, remembered per incarnation (`{fresh: true}`: read and remember).
   */
  credentials(name: string, reuse?: { incarnation: string; fresh?: boolean }): Promise<Credentials | undefined>;
  /** Forgets a proxy's remembered credentials (a probe with them failed). */
  forgetCredentials(name: string): void;
  /** The newest `limit` events, newest first. */
  events(name: string, limit?: number): Promise<ProxyEvent[]>;
  /** Appends to the proxy's audit trail and keeps only the newest `keep` events. */
  addEvent(name: string, event: ProxyEvent, keep: number): Promise<void>;
  /** Keeps only the newest `keep` events of a proxy. */
  trimEvents(name: string, keep: number): Promise<void>;
  /** Records a request that failed validation, for its sender (`rejections/{messageId}`). */
  reject(messageId: string, error: ErrorInfo, raw: string, topic: string, now: number): Promise<void>;
}
