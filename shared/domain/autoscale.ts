/**
 * A pool's `spec.autoscale` (docs/architecture.md "Pools", docs/api.md "Demand: autoscaled pools") and the demand gateways report for a pool:
 * zod schemas, validated with errors naming the field.
 */
import { z } from 'zod';
import { parseDuration } from './duration.js';
import { reportedUsageSchema } from './usage.js';

/** At most this many members per pool (one pool reconcile reads and writes them in one transaction). */
export const MAX_REPLICAS = 200;

const count = (what: string) =>
  z
    .number({ error: `must be a number (${what})` })
    .int('must be an integer')
    .min(0, 'must be at least 0')
    .max(MAX_REPLICAS, `must be at most ${MAX_REPLICAS}`);

/** A duration as the pool schema writes them ("0s", "90s", "2m", "1h"), at most a day. */
const duration = (fallback: string) =>
  z
    .string({ error: 'must be a duration like "30s", "2m" or "1h"' })
    .refine((s) => {
      const ms = parseDuration(s);
      return ms !== undefined && ms <= 86_400_000;
    }, 'must be a duration of at most 1d, like "0s", "30s", "2m" or "1h"')
    .default(fallback);

const perMember = (what: string) =>
  z
    .number({ error: `must be a number (${what})` })
    .positive('must be greater than 0')
    .max(1_000_000)
    .optional();

/** The target a member should carry: in-flight requests, or requests started per second (exactly one). */
export const targetSchema = z
  .strictObject({
    inFlightPerMember: perMember('in-flight requests per Ready member'),
    requestsPerSecondPerMember: perMember('requests started per second per Ready member'),
  })
  .superRefine((t, ctx) => {
    const given = [t.inFlightPerMember, t.requestsPerSecondPerMember].filter((v) => v !== undefined).length;
    if (given !== 1)
      ctx.addIssue({
        code: 'custom',
        message: `must give exactly one of inFlightPerMember or requestsPerSecondPerMember (${given} given)`,
      });
  });

export const autoscaleSchema = z
  .strictObject({
    minReplicas: count('the fewest members; 0 lets the pool sleep'),
    maxReplicas: count('the most members').min(1, 'must be at least 1'),
    target: targetSchema,
    /** A scale-up waits until every recommendation in this window asks for it (HPA scaleUp window). */
    scaleUpStabilization: duration('0s'),
    /** A scale-down waits until every recommendation in this window allows it (HPA scaleDown window). */
    scaleDownAfter: duration('5m'),
    /** With minReplicas 0: the last member goes only after this long without any demand. */
    scaleToZeroAfter: duration('10m'),
  })
  .superRefine((a, ctx) => {
    if (a.minReplicas > a.maxReplicas)
      ctx.addIssue({
        code: 'custom',
        path: ['minReplicas'],
        message: `must be at most spec.autoscale.maxReplicas (${a.maxReplicas})`,
      });
  });
export type Autoscale = z.infer<typeof autoscaleSchema>;

/** How many of a kind of request, as a gateway counts them. */
const tally = z.number().min(0).max(1_000_000);

/** A gateway's demand for one pool over its last report interval. */
export const demandSchema = z.strictObject({
  /** Requests and tunnels going through a member of the pool now. */
  inFlight: tally,
  /** Requests and tunnels started per second over the interval. */
  startedPerSecond: tally,
  /** Requests held for the pool because it has no Ready member (waking it). */
  waiting: tally,
});
export type Demand = z.infer<typeof demandSchema>;

/** `POST /v1/pools/{name}/demand`: one gateway's report for one pool. */
export const demandReportSchema = demandSchema.extend({
  /** The reporting gateway: a DNS-label-like id it keeps for its life. */
  gateway: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'must be a lowercase id of letters, digits and -'),
  /**
   * Orders one gateway's reports: increasing (a gateway sends its start time in ms plus a counter);
   * a report with a sequence not above the stored one is stale and changes nothing.
   */
  sequence: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER),
  /** The gateway's report interval: the report expires after three of them without a newer one. */
  intervalSeconds: z.number().min(1).max(300).default(5),
  /** Members that sessions in use hold: not scaled away while held. */
  held: z.array(z.string().max(63)).max(200).default([]),
  /** The gateway's usage of the pool: counters since `usage.since` (docs/api.md "Usage and cost per GiB"). */
  usage: reportedUsageSchema.optional(),
});
export type DemandReport = z.infer<typeof demandReportSchema>;

/** The demand the controller sums (status.demand): the live gateways' reports, and how many. */
export const poolDemandSchema = demandSchema.extend({ gateways: z.number().int().min(0) });
export type PoolDemand = z.infer<typeof poolDemandSchema>;

/** How many intervals a report stays live without a newer one from its gateway. */
export const REPORT_LIFETIME_INTERVALS = 3;
