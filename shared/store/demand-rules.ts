/**
 * The rules of `poolDemand/{pool}.{gateway}` (one document per gateway per pool), shared by the
 * Firestore and memory stores: a report replaces the stored one only when its sequence is higher
 * (so a duplicated or late delivery changes nothing), and lives three of its gateway's intervals.
 * The document also keeps the gateway's usage counters for the pool controller to fold.
 */
import { z } from 'zod';
import { REPORT_LIFETIME_INTERVALS, type DemandReport, type PoolDemand } from '../domain/autoscale.js';
import {
  addCounts,
  countsOf,
  maxCounts,
  sameCounts,
  usageCountsSchema,
  ZERO_USAGE,
  type FoldedMark,
  type ReportedUsage,
  type UsageCounts,
} from '../domain/usage.js';

const seriesSchema = usageCountsSchema.extend({ since: z.number() });
type Series = z.infer<typeof seriesSchema>;

export const storedDemandSchema = z.object({
  pool: z.string(),
  gateway: z.string(),
  sequence: z.number(),
  inFlight: z.number(),
  startedPerSecond: z.number(),
  waiting: z.number(),
  held: z.array(z.string()),
  /** When the API took it, and when it stops counting as demand (epoch ms). */
  at: z.number(),
  expiresAtMs: z.number(),
  /** When this document's life began (its first write): a document made again after its deletion counts from zero. */
  first: z.number().optional(),
  /**
   * The gateway's latest usage series (docs/api.md "Usage and cost per GiB"), oldest first: each
   * the highest counters reported for it, whatever order the reports came in.
   */
  series: z.array(seriesSchema).default([]),
  /** The counts of series older than those kept. */
  carried: usageCountsSchema.optional(),
});
export type StoredDemand = z.infer<typeof storedDemandSchema>;

/** The document outlives its demand this long: the gateway's usage is folded, and the document deleted, well within it. */
export const USAGE_KEEP_MS = 2 * 86_400_000;
/** Series kept apart (so a late report of one still counts); older ones are summed into `carried`. */
export const SERIES_KEPT = 4;

/** What recording one report did. */
export interface DemandOutcome {
  /** False for a report whose sequence is not above the stored one (a duplicate, or late): its demand changes nothing. */
  applied: boolean;
  /** Whether an autoscaled pool should be reconciled now rather than at its next interval (see {@link wantsReconcile}). */
  kick: boolean;
  /** Whether the pool, autoscaled or fixed, should be reconciled now to fold usage (see {@link wantsFold}). */
  fold: boolean;
}

/** The document id: `.` cannot appear in a pool name or a gateway id, so no two pairs share one. */
export const demandId = (pool: string, gateway: string) => `${pool}.${gateway}`;

export const isLive = (d: StoredDemand, now: number) => d.expiresAtMs > now;

/** Every count a document holds. Only grows over the document's life. */
export const usageOfDoc = (d: StoredDemand): UsageCounts =>
  d.series.reduce((sum, s) => addCounts(sum, countsOf(s)), d.carried ?? ZERO_USAGE);

/** How much of `d` the pool has counted, by `folded` (the pool's mark for this gateway). */
export const countedOf = (d: StoredDemand, folded: FoldedMark | undefined): UsageCounts =>
  folded && folded.first === (d.first ?? d.at) ? countsOf(folded) : ZERO_USAGE;

/**
 * The series with a report's counters merged in: per series the highest of each counter (counters
 * only grow within a series), so a duplicate changes nothing and a late report adds what it has
 * beyond the stored one. A series older than every kept one, once `SERIES_KEPT` are kept, is dropped.
 */
export function mergeSeries(
  kept: readonly Series[],
  carried: UsageCounts | undefined,
  reported: ReportedUsage,
): { series: Series[]; carried: UsageCounts | undefined } {
  const same = kept.find((s) => s.since === reported.since);
  if (same) {
    const merged = { since: same.since, ...maxCounts(same, reported) };
    return { series: kept.map((s) => (s === same ? merged : s)), carried };
  }
  if (kept.length >= SERIES_KEPT && kept.every((s) => s.since > reported.since)) return { series: [...kept], carried };
  const series = [...kept, { since: reported.since, ...countsOf(reported) }].sort((a, b) => a.since - b.since);
  let rest = carried;
  while (series.length > SERIES_KEPT) {
    const oldest = series.shift();
    if (oldest) rest = addCounts(rest ?? ZERO_USAGE, countsOf(oldest));
  }
  return { series, carried: rest };
}

/**
 * The document a report makes, or undefined when it changes nothing: its demand replaces the
 * stored one only when its sequence is higher; its usage counters are merged whatever its sequence.
 *
 * @param folded - how much of the stored document the pool has counted (`status.usage.folded[gateway]`)
 */
export function demandStep(
  stored: StoredDemand | undefined,
  pool: string,
  report: DemandReport,
  now: number,
  folded?: FoldedMark,
): { write?: StoredDemand; outcome: DemandOutcome } {
  const { intervalSeconds, usage: reported, ...rest } = report;
  const usage = reported
    ? mergeSeries(stored?.series ?? [], stored?.carried, reported)
    : { series: stored?.series ?? [], carried: stored?.carried };
  const counts = { series: usage.series, ...(usage.carried && { carried: usage.carried }) };
  const newer = !stored || stored.sequence < report.sequence;
  const write: StoredDemand | undefined = newer
    ? {
        ...rest,
        pool,
        at: now,
        expiresAtMs: now + REPORT_LIFETIME_INTERVALS * intervalSeconds * 1000,
        first: stored ? (stored.first ?? stored.at) : now,
        ...counts,
      }
    : stored && !sameCounts(usageOfDoc(stored), usageOfDoc({ ...stored, ...counts }))
      ? { ...stored, ...counts }
      : undefined;
  if (!write) return { outcome: { applied: false, kick: false, fold: false } };
  const previous = stored && isLive(stored, now) ? stored : undefined;
  return {
    write,
    outcome: {
      applied: newer,
      kick: newer && wantsReconcile(previous, write),
      fold: wantsFold(stored, write, folded),
    },
  };
}

/**
 * Whether a report should reconcile its pool at once: demand appeared from nothing (the pool may be
 * resting, with no reconcile due), or requests started waiting (a sleeping pool is being woken).
 * Otherwise the pool's own interval looks at it: one reconcile per interval however many gateways.
 */
export function wantsReconcile(previous: StoredDemand | undefined, next: StoredDemand): boolean {
  const used = (d: StoredDemand | undefined) =>
    d !== undefined && (d.inFlight > 0 || d.waiting > 0 || d.startedPerSecond > 0);
  if (next.waiting > 0 && (previous?.waiting ?? 0) === 0) return true;
  return used(next) && !used(previous);
}

/**
 * Whether a report's usage should reconcile its pool at once: it adds counts where none were
 * waiting to be folded. Counts already waiting mean a fold is due (the fold that leaves counts
 * waiting, or counts any, asks to run again an interval later), so it is not asked twice.
 */
export function wantsFold(
  stored: StoredDemand | undefined,
  next: StoredDemand,
  folded: FoldedMark | undefined,
): boolean {
  const before = stored ? usageOfDoc(stored) : ZERO_USAGE;
  if (sameCounts(before, usageOfDoc(next))) return false;
  return stored === undefined || sameCounts(before, countedOf(stored, folded));
}

/** The live reports summed (status.demand), and the members their sessions hold. */
export function sumDemand(reports: readonly StoredDemand[], now: number): { demand: PoolDemand; held: Set<string> } {
  const live = reports.filter((r) => isLive(r, now));
  const demand: PoolDemand = { inFlight: 0, startedPerSecond: 0, waiting: 0, gateways: live.length };
  const held = new Set<string>();
  for (const r of live) {
    demand.inFlight += r.inFlight;
    demand.startedPerSecond += r.startedPerSecond;
    demand.waiting += r.waiting;
    for (const m of r.held) held.add(m);
  }
  demand.startedPerSecond = Math.round(demand.startedPerSecond * 100) / 100;
  return { demand, held };
}
