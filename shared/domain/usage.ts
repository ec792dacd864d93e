/**
 * A pool's usage (docs/api.md "Usage and cost per GiB"): what the gateways count per pool, as they
 * report it with their demand, and as the pool controller folds it into `status.usage`.
 */
import { z } from 'zod';

const counter = z.number().int('must be an integer').min(0, 'must be at least 0').max(Number.MAX_SAFE_INTEGER);

/** Counts of traffic through a pool's members. */
export const usageCountsSchema = z.object({
  /** Requests and tunnels the gateway routed to the pool. */
  requests: counter,
  /** Of those, the ones answered through a member (a response head, an established tunnel). */
  succeeded: counter,
  /** Bytes received from the members, and sent to them. */
  bytesIn: counter,
  bytesOut: counter,
});
export type UsageCounts = z.infer<typeof usageCountsSchema>;

export const ZERO_USAGE: UsageCounts = Object.freeze({ requests: 0, succeeded: 0, bytesIn: 0, bytesOut: 0 });

/**
 * One gateway's usage of one pool as it reports it: counters that only grow within a series, and
 * the series' start (`since`: the gateway's sequence when it began counting from zero). Counters,
 * not increments, so a report lost, duplicated or delivered out of order neither loses nor adds.
 */
export const reportedUsageSchema = z
  .strictObject({ ...usageCountsSchema.shape, since: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER) })
  .superRefine((u, ctx) => {
    if (u.succeeded > u.requests)
      ctx.addIssue({ code: 'custom', path: ['succeeded'], message: `must be at most requests (${u.requests})` });
  });
export type ReportedUsage = z.infer<typeof reportedUsageSchema>;

/** What a stretch of time cost besides its counts: the members' instance-hours and their Internet egress. */
const spendSchema = z.object({
  /** USD of the members' hours (`status.cost.perHourUsd` over the time). */
  instanceUsd: z.number().min(0),
  /** USD of the members' Internet egress (the bytes through cloud VMs at the catalogue's rate). */
  egressUsd: z.number().min(0),
});

export const usageTotalsSchema = usageCountsSchema.extend(spendSchema.shape);
export type UsageTotals = z.infer<typeof usageTotalsSchema>;

/**
 * A level held over part of an hour (Ready members, demand): its highest, and its time-weighted
 * mean over the `seconds` of the hour it was observed (the mean of a level held 3 for 30 min and
 * 1 for 30 min is 2).
 */
export const hourLevelSchema = z.object({
  peak: z.number().min(0),
  mean: z.number().min(0),
  seconds: z.number().min(0).max(3600),
});
export type HourLevel = z.infer<typeof hourLevelSchema>;

/**
 * The levels a pool's hours follow: `members` its Ready members; `demand` the requests in flight
 * through it or waiting for a member, summed over the live gateways' reports.
 */
export const levelsSchema = z.object({ members: z.number().int().min(0), demand: z.number().min(0) });
export type Levels = z.infer<typeof levelsSchema>;

/** One hour of a pool's usage; `hour` is its start (epoch ms, a whole UTC hour); the levels while they were observed. */
export const usageHourSchema = usageTotalsSchema.extend({
  hour: z.number(),
  members: hourLevelSchema.optional(),
  demand: hourLevelSchema.optional(),
});
export type UsageHour = z.infer<typeof usageHourSchema>;

/** The cost of a pool's traffic over a stretch: per GiB carried and per 1,000 answered requests (absent: nothing carried). */
export const usageFiguresSchema = usageTotalsSchema.extend({
  perGibUsd: z.number().optional(),
  perThousandSucceededUsd: z.number().optional(),
});
export type UsageFigures = z.infer<typeof usageFiguresSchema>;

/** How much of one gateway document's usage the pool has counted (its `first` tells the document's life apart). */
export const foldedMarkSchema = usageCountsSchema.extend({ first: z.number() });
export type FoldedMark = z.infer<typeof foldedMarkSchema>;

/** `status.usage` of a pool (shared/pools/usage.ts). */
export const poolUsageSchema = z.object({
  /** Since the pool's first fold (`since`, epoch ms). */
  total: usageTotalsSchema.extend({ since: z.number() }),
  /** The last 24 h, oldest first: at most 24 whole UTC hours, the current one included. */
  hours: z.array(usageHourSchema).max(24),
  /** The last 24 h summed, and what it cost per GiB and per 1,000 answered requests. */
  last24h: usageFiguresSchema,
  /** Per gateway document (`poolDemand/{pool}.{gateway}`): how much of it is counted. */
  folded: z.record(z.string(), foldedMarkSchema),
  /** When the counts and the instance-hours were last folded (epoch ms). */
  foldedAt: z.number(),
  /** The levels as last observed, and since when (epoch ms): held until the next change, then added to the hours they span. */
  levels: levelsSchema.extend({ at: z.number() }).optional(),
});
export type PoolUsage = z.infer<typeof poolUsageSchema>;

/** The four counts, from the schema: every helper below goes over these keys. */
const COUNT_KEYS = usageCountsSchema.keyof().options;

/** `op` applied to each count of `a` and `b`. */
function eachCount(a: UsageCounts, b: UsageCounts, op: (x: number, y: number) => number): UsageCounts {
  const out = { ...ZERO_USAGE };
  for (const k of COUNT_KEYS) out[k] = op(a[k], b[k]);
  return out;
}

/** The counts summed. */
export const addCounts = (a: UsageCounts, b: UsageCounts) => eachCount(a, b, (x, y) => x + y);

/** The higher of each count (counters only grow: the higher is the later). */
export const maxCounts = (a: UsageCounts, b: UsageCounts) => eachCount(a, b, Math.max);

/** `a - b` per count, never below zero. */
export const subtractCounts = (a: UsageCounts, b: UsageCounts) => eachCount(a, b, (x, y) => Math.max(0, x - y));

/** Whether `a` and `b` are the same counts. */
export const sameCounts = (a: UsageCounts, b: UsageCounts) => COUNT_KEYS.every((k) => a[k] === b[k]);

/** Only the four counts of a larger object. */
export const countsOf = (c: UsageCounts): UsageCounts => eachCount(c, ZERO_USAGE, (x) => x);
