/**
 * The `pools/{name}` rules: request ordering is proxy-rules.ts's (`orderApply`, `orderDelete`);
 * here only what a pool adds — its new document, its tombstone id, and its members' documents.
 */
import { randomBytes } from 'node:crypto';
import { MEMBER_SUFFIX_LENGTH, POOL_LABEL, type PoolApplyRequest } from '../domain/pool.js';
import { initialPoolStatus, NEVER_REACHABLE, type PoolDoc } from '../domain/pool-status.js';
import { initialStatus, type ProxyDoc } from '../domain/status.js';
import type { PoolWrites } from './ports.js';
import { orderApply, type OrderedUpdate } from './proxy-rules.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** Pools and proxies share `tombstones`; a pool's is `pool.{name}` (a proxy name has no dot). */
export const poolTombId = (name: string) => `pool.${name}`;

/** A fresh member name `<pool>-<5 random letters and digits>`. */
export function memberName(pool: string): string {
  const alphabet = 'abcdefghijklmnopqrstuvwxyz0123456789';
  const bytes = randomBytes(MEMBER_SUFFIX_LENGTH);
  return `${pool}-${[...bytes].map((b) => alphabet[b % alphabet.length]).join('')}`;
}

/** Whether an entry of the pool stopped getting members for its current generation (`NeverReachable`). */
function entryStopped(pool: PoolDoc): boolean {
  return pool.status.entries.some((e) => e.reason === NEVER_REACHABLE && e.unreachable?.generation === pool.generation);
}

/** A pool apply against what is stored: `orderApply`, where a label change is a new generation too. */
export function poolApplyStep(
  existing: PoolDoc | undefined,
  tombAt: number,
  request: PoolApplyRequest,
  publishTime: number,
  now: number,
): Exclude<OrderedUpdate, { outcome: 'create' }> | { outcome: 'created'; doc: PoolDoc } {
  const order = orderApply(existing, tombAt, request, publishTime, true);
  if (order.outcome === 'unchanged' && order.requestTime !== undefined && existing && entryStopped(existing))
    // Applying the same pool again is the retry of an entry that stopped (its members never
    // reachable): a newer request moves the generation the stop holds for; a redelivery is no newer.
    return { outcome: 'updated', requestTime: order.requestTime, generation: existing.generation + 1, undelete: false };
  if (order.outcome !== 'create') return order;
  const doc: PoolDoc = {
    apiVersion: 'egress.dev/v1',
    kind: 'ProxyPool',
    metadata: { name: request.metadata.name, labels: request.metadata.labels },
    spec: request.spec,
    generation: 1,
    requestTime: publishTime,
    createdAt: iso(now),
    status: initialPoolStatus(),
  };
  return { outcome: 'created', doc };
}

/** The documents of the members a reconcile creates, under fresh names. */
export function memberDocs(pool: string, create: PoolWrites['create'], now: number): ProxyDoc[] {
  return create.map((member) => ({
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: { name: memberName(pool), labels: { ...member.labels, [POOL_LABEL]: pool } },
    spec: member.spec,
    generation: 1,
    requestTime: now,
    createdAt: iso(now),
    status: initialStatus(),
  }));
}
