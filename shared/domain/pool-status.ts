/** Pool state as stored in Firestore `pools/{name}` (docs/architecture.md "State in Firestore"). */
import { z } from 'zod';
import { labelsSchema } from './proxy.js';
import { poolSpecSchema, spreadEntrySchema } from './pool.js';
import { poolDemandSchema } from './autoscale.js';
import { poolUsageSchema } from './usage.js';

/** One spread entry as the controller last saw it: its share, its members, and its availability. */
export const entryStatusSchema = spreadEntrySchema.extend({
  /** Members this entry should have now (its even share, or more while another entry is out). */
  desired: z.number().int(),
  /** Live members on this entry, and how many of them are Ready. */
  members: z.number().int(),
  ready: z.number().int(),
  available: z.boolean(),
  /** Why it is out (`ProviderUnhealthy`, `QuotaExceeded`), while it is. */
  reason: z.string().optional(),
  message: z.string().optional(),
  /** When it was last seen unavailable (epoch ms); recovery waits a delay after it. */
  lastBadAt: z.number().optional(),
  /** How many times in a row it went out soon after recovering (the recovery delay doubles). */
  failures: z.number().int().default(0),
  recoveredAt: z.number().optional(),
  /**
   * Members of this entry that died without ever passing a probe, in a row, for the pool's
   * `generation` (a Ready member clears it); at `neverReadyLimit` the entry gets no more members
   * (reason `NeverReachable`) until the generation moves (docs/architecture.md "Never reachable").
   */
  unreachable: z.object({ generation: z.number().int(), members: z.array(z.string()) }).optional(),
});
export type EntryStatus = z.infer<typeof entryStatusSchema>;

export const POOL_CONDITION_TYPES = ['Available', 'Progressing', 'Degraded'] as const;
export const poolConditionSchema = z.object({
  type: z.enum(POOL_CONDITION_TYPES),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z.string(),
  message: z.string(),
  lastTransitionTime: z.string(),
});
export type PoolCondition = z.infer<typeof poolConditionSchema>;

/** What a pool's live members cost an hour (shared/cost/pool-cost.ts), as its last reconcile priced them. */
export const poolCostSchema = z.object({
  /** The total of `lines`, USD an hour. */
  perHourUsd: z.number(),
  lines: z.array(z.object({ what: z.string(), members: z.number().int(), perHourUsd: z.number() })),
  /** Members no price applies to, in words (a Pod billed as the cluster's nodes, an endpoint without `hourlyUsd`). */
  unpriced: z.array(z.string()),
  /** The price catalogue's date (shared/cost/prices-*.json). */
  pricesOf: z.string(),
});
export type PoolCost = z.infer<typeof poolCostSchema>;

export const poolStatusSchema = z.object({
  observedGeneration: z.number().int(),
  /** Live members (not being deleted). */
  replicas: z.number().int(),
  readyReplicas: z.number().int(),
  /** Live members made from the current template. */
  updatedReplicas: z.number().int(),
  /** Members being drained and deleted. */
  terminating: z.number().int(),
  entries: z.array(entryStatusSchema),
  conditions: z.array(poolConditionSchema),
  /** The live members' running cost; absent until a reconcile priced them. */
  cost: poolCostSchema.optional(),
  /** Bumped by every reconcile that changed something (the transaction's write on this document). */
  revision: z.number().int(),
  lastReconcileAt: z.string().optional(),
  /** Members the pool wants now: `spec.replicas`, or the autoscaler's decision. */
  desiredReplicas: z.number().int().optional(),
  /** The live gateways' summed demand, as the autoscaler last read it. */
  demand: poolDemandSchema.optional(),
  /** The gateways' usage folded, and what it cost per GiB and per 1,000 answered requests; absent until a gateway reported any. */
  usage: poolUsageSchema.optional(),
  /** The autoscaler's memory: recent recommendations (its stabilisation windows) and the last demand seen. */
  autoscale: z
    .object({
      recommendations: z.array(z.object({ at: z.number(), replicas: z.number().int() })),
      lastDemandAt: z.number().optional(),
    })
    .optional(),
});
export type PoolStatus = z.infer<typeof poolStatusSchema>;

export const poolDocSchema = z.object({
  apiVersion: z.literal('egress.dev/v1'),
  kind: z.literal('ProxyPool'),
  metadata: z.object({ name: z.string(), labels: labelsSchema }),
  spec: poolSpecSchema,
  generation: z.number().int(),
  /** Publish time (epoch ms) of the newest request applied; older requests are stale. */
  requestTime: z.number(),
  createdAt: z.string(),
  deletionRequestedAt: z.string().optional(),
  status: poolStatusSchema,
});
export type PoolDoc = z.infer<typeof poolDocSchema>;

/** Whether an entry stopped getting members because they were never reachable (`unreachable`). */
export const NEVER_REACHABLE = 'NeverReachable';

export function initialPoolStatus(): PoolStatus {
  return {
    observedGeneration: 0,
    replicas: 0,
    readyReplicas: 0,
    updatedReplicas: 0,
    terminating: 0,
    entries: [],
    conditions: [],
    revision: 0,
  };
}
