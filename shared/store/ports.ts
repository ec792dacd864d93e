/**
 * The store's ports: what the functions need from state, each implemented on Firestore
 * (`shared/store/firestore/`) and in memory (`shared/store/memory/`), both held to one contract suite
 * (`test/support/store-contract*.ts`, run on both by `shared/store/memory/contract.test.ts` and
 * `test/integration/store-contract.test.ts`).
 */
import type { PoolApplyRequest } from '../domain/pool.js';
import type { DemandReport } from '../domain/autoscale.js';
import type { FoldedMark } from '../domain/usage.js';
import type { DemandOutcome, StoredDemand } from './demand-rules.js';
import type { PoolDoc, PoolStatus } from '../domain/pool-status.js';
import type { ApplyRequest } from '../domain/proxy.js';
import type { ProxyDoc, ProxyStatus } from '../domain/status.js';
import type { ErrorInfo } from '../errors.js';
import type { Credentials } from '../providers/contract.js';
import type { InventoryItem, RelayReport } from '../wire/protocol.js';
import type { ApplyOutcome, DeleteOutcome } from './proxy-rules.js';
import type { CommandDoc, InventoryMark, ProviderStatus, ProxyEvent, RelayDoc, StaticClaim } from './records.js';
import type { RecordOutcome, ReportInput } from './report-rules.js';

/**
 * A proxy document as read, with the update time it had then (`readAt`, an RFC 3339 timestamp with
 * nanoseconds): the basis of a decision. A fenced write given `readAt` is refused when the document
 * was written since, whatever copy of the document the caller holds.
 */
export interface StoredProxy {
  doc: ProxyDoc;
  readAt: string;
}

/** A sweep page as read; `readTime` (epoch ms) is where `changes` picks up after it. */
export interface ProxyPage {
  items: StoredProxy[];
  next: string | null;
  readTime: number;
}

/** A name range's changes since a read (`ProxyRepository.changes`); `count` counts corrupt documents too. */
export interface PageChanges {
  changed: StoredProxy[];
  count: number;
  readTime: number;
}

/** A proxy's credentials, as the provider contract defines them. */
export type { Credentials };

/** Wall-clock milliseconds: `systemClock` in production, a `ManualClock` in tests. */
export interface Clock {
  now(): number;
}

/** The `proxies/{name}` repository: requests, fenced status writes, leases, credentials, events. */
/** What the rollout budget is decided on (`ProxyRepository.rolloutCounts`). */
export interface RolloutCounts {
  /** The provider's proxies in phase Replacing. */
  replacing: number;
  /** All the provider's proxies. */
  proxies: number;
}

export interface ProxyRepository {
  /** One proxy as read; undefined when absent (or corrupt: logged, never crashes a sweep). */
  get(name: string): Promise<StoredProxy | undefined>;
  /** One page in name order after `after`; `next` is the following page's cursor, or null after the last. */
  page(after: string | null, limit: number): Promise<ProxyPage>;
  /**
   * What changed in the name range (`after`, `through`] (to the end when `through` is null) since
   * a read at `since` (a `readTime` of `page` or `changes`): every proxy written at or after it
   * (some written shortly before may come too), and how many documents the range holds now. What a
   * cached sweep page needs to stay current (shared/reconcile/sweep-cache.ts): one billed read for
   * the changes when there are none, one for the count.
   */
  changes(after: string | null, through: string | null, since: number): Promise<PageChanges>;
  /**
   * Up to `limit` Ready members of pool `pool`, read now (one indexed query: as many billed reads
   * as it answers, one when none is Ready). Discovery's `fresh=true`: a request held while its pool
   * wakes looks here, not at a cached page.
   */
  readyInPool(pool: string, limit: number): Promise<StoredProxy[]>;
  /** Every proxy, in name order (listings; never the basis of a fenced write). */
  list(): Promise<ProxyDoc[]>;
  /** Names of other live proxies whose last probe saw `ip` as their egress IP (at most 20). */
  sharingEgressIp(ip: string, except: string): Promise<string[]>;
  /** Proxies of `provider`, and those of them in phase Replacing (the rollout budget). */
  rolloutCounts(provider: string): Promise<RolloutCounts>;
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
   * @param credentials - for the delete of a replaced instance: its successor's credentials,
   *   replacing the stored ones in the same commit as the lease (never when it is refused)
   * @param doc - the document as read at `readAt`: the lease is decided on it and its write
   *   preconditioned on `readAt`, so an unchanged document costs no read (as `writeStatus`'s basis)
   * @returns when the lease taken runs out, or undefined when it was refused
   */
  acquireLease(
    name: string,
    holder: string,
    generation: number,
    ttlMs: number,
    clock: () => number,
    readAt: string,
    credentials?: Credentials,
    doc?: ProxyDoc,
  ): Promise<number | undefined>;
  /**
   * Writes a status computed for `generation`, fenced (see proxy-rules.ts#statusStep); releases
   * `holder`'s lease when given.
   *
   * @param basis - the document as read that the status was decided on: the write is decided on it
   *   and preconditioned on its `readAt`, so an unchanged document costs no read; when the document
   *   was written since, the write is decided again on a fresh read (the result is the same as without it)
   * @returns whether the write happened
   */
  writeStatus(
    name: string,
    generation: number,
    status: ProxyStatus,
    now: number,
    holder?: string,
    basis?: StoredProxy,
  ): Promise<boolean>;
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

/** What applying a relay report changed: the proxies whose instances changed (worth a check). */
export interface RelayReportOutcome {
  stale: boolean;
  changedProxies: string[];
}

export interface InstanceAndCommand {
  item: InventoryItem | undefined;
  command: CommandDoc | undefined;
}

/** An inventory read (`RelayRepository.inventorySince`): the relay document, and the whole inventory or what changed. */
export interface InventoryRead {
  relay: RelayDoc;
  /** True: `items` is the whole inventory. False: only the items that may have changed since the mark. */
  full: boolean;
  items: InventoryItem[];
  /** Not full: the items that may have changed and are gone (or no longer parse). */
  removed: string[];
  /** Where the next read picks up (`inventorySince(relay, mark)`). */
  mark: InventoryMark;
}

/** The relays' state: `relays/{id}` heartbeat, `instances/{name}` inventory, `commands/{name}` issued commands. */
export interface RelayRepository {
  /** A relay's heartbeat document; undefined when absent or corrupt. */
  relay(relay: string): Promise<RelayDoc | undefined>;
  instance(relay: string, name: string): Promise<InventoryItem | undefined>;
  instances(relay: string): Promise<InventoryItem[]>;
  /**
   * The relay document and the inventory items that may have changed since the read that returned
   * `since` (by the document's recent changes, see relay-rules.ts#changedAfter): one read and one
   * per such item. The whole inventory instead when there is no mark, or the changes cannot vouch
   * for the rest (another boot, a clock gone back, changes not kept back to the mark, `*`).
   *
   * @returns undefined when the relay has no (readable) document
   */
  inventorySince(relay: string, since: InventoryMark | undefined): Promise<InventoryRead | undefined>;
  command(relay: string, name: string): Promise<CommandDoc | undefined>;
  /**
   * An instance's inventory item and its last command at one read time. Two separate reads can
   * straddle a report: the item read before the report stored it, the command after the report
   * marked its create done — a running instance that looks gone (NotFound), finalised and leaked.
   */
  instanceAndCommand(relay: string, name: string): Promise<InstanceAndCommand>;
  /** Records a command about to be published (before the publish); it counts as unsent until `markSent`. */
  recordCommand(relay: string, name: string, command: Omit<CommandDoc, 'done' | 'error' | 'sentAt'>): Promise<void>;
  /** Notes that command `commandId` was published at `at`; a newer command recorded since is left alone. */
  markSent(relay: string, name: string, commandId: string, at: number): Promise<void>;
  /**
   * Applies a relay report (see relay-rules.ts): heartbeat, the inventory's changes, command results.
   * Older or duplicated reports are stale; their results still complete the commands they name.
   *
   * @throws RetryableError when concurrent reports kept winning the race
   */
  applyReport(report: RelayReport, now: number): Promise<RelayReportOutcome>;
}

/** What one pool reconcile writes, decided on what the transaction read. */
export interface PoolWrites {
  create: { spec: ProxyDoc['spec']; labels: Record<string, string> }[];
  drain: string[];
  status?: PoolStatus;
  /** Remove the pool document (a deleted pool whose members are all gone). */
  finalise?: boolean;
}

/** The `pools/{name}` repository: pool requests (ordered as proxies' are), members, the reconcile transaction. */
export interface PoolRepository {
  get(name: string): Promise<PoolDoc | undefined>;
  /** Every pool, in name order. */
  list(): Promise<PoolDoc[]>;
  names(): Promise<string[]>;
  /** The pool's members (every proxy labelled with it), in name order. */
  members(name: string): Promise<ProxyDoc[]>;
  apply(request: PoolApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome>;
  requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome>;
  /**
   * One pool reconcile as a transaction: `decide` sees the pool and its members and chooses the
   * writes, committed together with the pool document (so two reconciles decided on one read
   * cannot both commit: the second is decided again). `clock` is read at the start of every
   * attempt, before its reads, and that time is the one `decide` sees and the writes carry: a
   * member created by a retried attempt is stamped no earlier than the pool it was made from.
   *
   * @returns what `decide` returned, and the names of the members created
   */
  reconcile<T>(
    name: string,
    clock: () => number,
    decide: (pool: PoolDoc | undefined, members: ProxyDoc[], now: number) => { writes: PoolWrites; result: T },
  ): Promise<{ result: T; created: string[] }>;
  addEvent(name: string, event: ProxyEvent, keep: number): Promise<void>;
  events(name: string, limit?: number): Promise<ProxyEvent[]>;
  /** Removes the events of a finalised pool. */
  removeEvents(name: string): Promise<void>;
}

/** `poolDemand/{pool}.{gateway}`: each gateway's latest demand and usage report per pool (demand-rules.ts). */
export interface DemandRepository {
  /**
   * Records one report: at most one write; a report whose sequence is not above the stored one
   * (duplicated, or delivered late) changes nothing.
   *
   * @param folded - how much of this gateway's document the pool has counted (decides the kick)
   */
  record(pool: string, report: DemandReport, now: number, folded?: FoldedMark): Promise<DemandOutcome>;
  /** The pool's documents, their demand expired or not (sumDemand counts the live ones; their usage is folded). */
  all(pool: string): Promise<StoredDemand[]>;
}

/** `providers/{name}`: the provider-health monitor's latest verdict per provider. */
export interface ProviderStatusRepository {
  write(status: ProviderStatus): Promise<void>;
  get(name: string): Promise<ProviderStatus | undefined>;
  all(): Promise<ProviderStatus[]>;
}

/**
 * Reports from traffic: counted on the proxy's status with an event, atomically; the caller's
 * budgets (reports a minute, bans an hour) kept beside, approximately (report-rules.ts).
 */
export interface ReportRepository {
  /**
   * Records one report (a retry with the same `requestId` from the same caller is a duplicate).
   *
   * @param signal - the caller gave up: no further transaction attempt is started
   */
  record(input: ReportInput, signal?: AbortSignal): Promise<RecordOutcome>;
}

/** What a `static` provider's create asks to claim: the instance, and the endpoints it may take, best first. */
export interface ClaimRequest {
  provider: string;
  instance: string;
  proxy: string;
  installationId: string;
  specHash: string;
  /** The endpoints the placement selects, in config order, with the credentials each requires. */
  candidates: { id: string; key: string; host: string; port: number; credentials?: Credentials | undefined }[];
  /** A released endpoint is not claimed again before this long after its release. */
  cooldownMs: number;
  now: number;
}

/** The claim a create got, or why it got none. */
export type ClaimOutcome =
  { claimed: StaticClaim } | { claimed?: undefined; taken: number; cooling: number; nextFreeAt?: number | undefined };

/** The `static` provider's claims, `staticClaims/{id}`: which instance holds which endpoint. */
export interface StaticClaimRepository {
  /**
   * Adopts the instance's claim, or claims a free endpoint (never released, else released longest
   * ago and rested `cooldownMs`), each endpoint in a transaction of its own that reads only it: two
   * creates never hold one endpoint, and a create that loses a race moves on to the next. (Two
   * concurrent creates of one instance could each claim one; the reconciler's lease per proxy keeps
   * them from happening.) An endpoint with credentials has them stored as the proxy's
   * (`credentials/{proxy}`) in the same transaction: the probe and discovery read them there.
   */
  claim(request: ClaimRequest): Promise<ClaimOutcome>;
  /** The claim held by `instance`; undefined when none (a consistent read: certain). */
  held(provider: string, instance: string): Promise<StaticClaim | undefined>;
  /** Releases the instance's claim, if any (idempotent). */
  release(provider: string, instance: string, now: number): Promise<void>;
  /** Every claim document of the provider, held or released. */
  all(provider: string): Promise<StaticClaim[]>;
}
