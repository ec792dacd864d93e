/**
 * The `proxies/{name}` rules, once: request ordering by publish time, tombstones, generation and
 * lease fencing, the decision basis. Pure functions of what was read; the Firestore and in-memory
 * repositories only read, call these, and write what they return.
 */
import { POOL_LABEL } from '../domain/pool.js';
import type { ApplyRequest } from '../domain/proxy.js';
import {
  creationStopped,
  initialStatus,
  REPORT_OWNED_FIELDS,
  type Lease,
  type ProxyDoc,
  type ProxyStatus,
} from '../domain/status.js';
import { clip } from '../domain/text.js';
import { ValidationError, type ErrorInfo } from '../errors.js';

export type ApplyOutcome = 'created' | 'updated' | 'unchanged' | 'stale';
export type DeleteOutcome = 'marked' | 'already' | 'absent' | 'stale';

/** What an apply writes: a new document, or fields of the existing one (`undelete` clears `deletionRequestedAt`). */
export type ApplyStep =
  | { outcome: 'stale' }
  | { outcome: 'created'; doc: ProxyDoc }
  | { outcome: 'unchanged'; requestTime?: number }
  | {
      outcome: 'updated';
      patch: { spec: ProxyDoc['spec']; labels: Record<string, string>; requestTime: number; generation: number };
      undelete: boolean;
    };

/** What a delete writes: a tombstone (absent proxy), or fields of the existing document. */
export type DeleteStep =
  | { outcome: 'absent'; tombstone: boolean }
  | { outcome: 'stale' }
  | { outcome: 'already'; requestTime?: number }
  | { outcome: 'marked'; patch: { deletionRequestedAt: string; requestTime: number; generation: number } };

const iso = (ms: number) => new Date(ms).toISOString();

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

/** @throws ValidationError when a request sets the pool label (only a pool sets it on its members) */
export function refusePoolLabel(request: ApplyRequest): void {
  if (request.metadata.labels[POOL_LABEL] !== undefined)
    throw new ValidationError(`metadata.labels.${POOL_LABEL}`, 'is set only by a pool on its members');
}

/** What request ordering reads of a stored proxy or pool document. */
export interface Ordered {
  generation: number;
  requestTime: number;
  deletionRequestedAt?: string | undefined;
  spec: unknown;
  metadata: { labels: Record<string, string> };
}

/** How an apply changes a stored document: new `requestTime` and `generation` (`undelete` clears the delete mark). */
export type OrderedUpdate =
  | { outcome: 'stale' }
  | { outcome: 'create' }
  | { outcome: 'unchanged'; requestTime?: number }
  | { outcome: 'updated'; requestTime: number; generation: number; undelete: boolean };

/**
 * Request ordering, for proxies and pools alike. Requests older than the newest one applied (or
 * than a completed delete, `tombAt`) are stale and ignored, so redelivered and reordered messages
 * converge; a newer one with nothing to change only moves `requestTime`.
 *
 * @param labelsBump - whether a label change alone is a new generation (pools: yes; proxies: no)
 */
export function orderApply(
  existing: Ordered | undefined,
  tombAt: number,
  request: { spec: unknown; metadata: { labels: Record<string, string> } },
  publishTime: number,
  labelsBump: boolean,
): OrderedUpdate {
  if (!existing) return publishTime <= tombAt ? { outcome: 'stale' } : { outcome: 'create' };
  if (publishTime < existing.requestTime) return { outcome: 'stale' };
  const specChanged = JSON.stringify(existing.spec) !== JSON.stringify(request.spec);
  const labelsChanged = JSON.stringify(existing.metadata.labels) !== JSON.stringify(request.metadata.labels);
  const undelete = existing.deletionRequestedAt !== undefined;
  if (!specChanged && !labelsChanged && !undelete)
    return publishTime > existing.requestTime
      ? { outcome: 'unchanged', requestTime: publishTime }
      : { outcome: 'unchanged' };
  const bump = specChanged || undelete || (labelsBump && labelsChanged);
  return { outcome: 'updated', requestTime: publishTime, generation: existing.generation + (bump ? 1 : 0), undelete };
}

/**
 * An apply request against what is stored (ordered by `orderApply`).
 *
 * @throws ValidationError on `spec.provider` when it would change (immutable), or for a pool member
 */
export function applyStep(
  existing: ProxyDoc | undefined,
  tombAt: number,
  request: ApplyRequest,
  publishTime: number,
  now: number,
): ApplyStep {
  const name = request.metadata.name;
  if (existing) refuseMember(existing);
  const order = retryStopped(existing, orderApply(existing, tombAt, request, publishTime, false));
  if (order.outcome === 'stale' || order.outcome === 'unchanged') return order;
  if (existing && existing.spec.provider !== request.spec.provider) {
    throw new ValidationError(
      'spec.provider',
      `is immutable: proxy "${name}" uses provider "${existing.spec.provider}"; delete it first`,
    );
  }
  if (order.outcome === 'create') {
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
    return { outcome: 'created', doc };
  }
  const { requestTime, generation, undelete } = order;
  return {
    outcome: 'updated',
    patch: { spec: request.spec, labels: request.metadata.labels, requestTime, generation },
    undelete,
  };
}

/**
 * Applying a proxy again whose creation stopped (its instances were never reachable,
 * `status.unreachable`) is the user's retry: a newer request with the same spec moves the
 * generation, which the stop holds for. A redelivery of that request is no newer (`unchanged`
 * without `requestTime`), and the stop it cleared is for the old generation: it moves nothing.
 */
function retryStopped(existing: ProxyDoc | undefined, order: OrderedUpdate): OrderedUpdate {
  if (!existing || order.outcome !== 'unchanged' || order.requestTime === undefined) return order;
  if (!creationStopped(existing.status, existing.generation)) return order;
  return { outcome: 'updated', requestTime: order.requestTime, generation: existing.generation + 1, undelete: false };
}

/**
 * A delete request against what is stored, for proxies and pools alike: marks the document, or
 * leaves a tombstone when it does not exist yet (so an apply published before it, arriving later,
 * is stale).
 */
export function orderDelete(
  existing: Ordered | undefined,
  tombAt: number,
  publishTime: number,
  now: number,
): DeleteStep {
  if (!existing) return { outcome: 'absent', tombstone: tombAt < publishTime };
  if (publishTime < existing.requestTime) return { outcome: 'stale' };
  if (existing.deletionRequestedAt)
    // Still the newest request: an apply published before it, arriving later, is stale.
    return publishTime > existing.requestTime
      ? { outcome: 'already', requestTime: publishTime }
      : { outcome: 'already' };
  const patch = { deletionRequestedAt: iso(now), requestTime: publishTime, generation: existing.generation + 1 };
  return { outcome: 'marked', patch };
}

/**
 * A proxy delete request (`orderDelete`).
 *
 * @throws ValidationError for a pool member
 */
export function deleteStep(
  existing: ProxyDoc | undefined,
  tombAt: number,
  publishTime: number,
  now: number,
): DeleteStep {
  if (existing) refuseMember(existing);
  return orderDelete(existing, tombAt, publishTime, now);
}

/**
 * The lease a worker may take, or undefined: refused when the proxy is gone, its generation moved,
 * it was written since `readAt` (the decision's read: another worker may have acted in between), or
 * another worker holds a live lease.
 *
 * @param updatedAt - the document's update time as just read
 */
export function leaseStep(
  doc: ProxyDoc | undefined,
  updatedAt: string | undefined,
  fence: { holder: string; generation: number; ttlMs: number; readAt: string },
  now: number,
): Lease | undefined {
  const { holder, generation } = fence;
  if (!doc || doc.generation !== generation) return undefined;
  if (updatedAt === undefined || updatedAt !== fence.readAt) return undefined;
  if (doc.lease && doc.lease.holder !== holder && doc.lease.until > now) return undefined;
  return { holder, until: now + fence.ttlMs, generation };
}

/**
 * The status write for `generation`, or undefined when fenced off: the generation moved, another
 * worker holds a live lease, or (with `holder`) the lease is no longer `holder`'s. The report-owned
 * fields are the stored ones (a report counted since the status was computed stays).
 *
 * @returns the status to store and whether the lease is released with it
 */
export function statusStep(
  doc: ProxyDoc | undefined,
  generation: number,
  status: ProxyStatus,
  now: number,
  holder?: string,
): { status: ProxyStatus; releaseLease: boolean } | undefined {
  if (!doc || doc.generation !== generation) return undefined;
  // A holder writes only while the lease is still its own: one that lost it (or was paused past
  // it while another took and released it) must not overwrite what was written since.
  if (holder !== undefined ? doc.lease?.holder !== holder : doc.lease && doc.lease.until > now) return undefined;
  const merged: ProxyStatus = { ...status };
  for (const field of REPORT_OWNED_FIELDS) {
    if (doc.status[field] === undefined) delete merged[field];
    else Object.assign(merged, { [field]: doc.status[field] });
  }
  const releaseLease = doc.lease !== undefined && (doc.lease.holder === holder || doc.lease.until <= now);
  return { status: merged, releaseLease };
}

/** Whether a deleted proxy may be removed now (its delete was decided for this generation). */
export function mayFinalise(doc: ProxyDoc | undefined, generation: number): doc is ProxyDoc {
  return doc !== undefined && doc.generation === generation && doc.deletionRequestedAt !== undefined;
}

/** Rejections carry `expireAt` too (see EVENT_RETENTION_MS). */
export const REJECTION_RETENTION_MS = 30 * 24 * 3600 * 1000;

/** The record of a request that failed validation (what the sender wrote, echoed: bounded and valid Unicode). */
export function rejectionRecord(error: ErrorInfo, raw: string, topic: string, now: number) {
  return {
    at: iso(now),
    topic,
    field: error.field === undefined ? null : clip(error.field, 512),
    reason: clip(error.message, 2048),
    code: error.code,
    data: clip(raw, 4096),
    expireAt: new Date(now + REJECTION_RETENTION_MS),
  };
}
