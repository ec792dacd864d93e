/**
 * The rules of `poolDemand/{pool}.{gateway}` (one document per gateway per pool), shared by the
 * Firestore and memory stores: a report replaces the stored one only when its sequence is higher
 * (so a duplicated or late delivery changes nothing), and lives three of its gateway's intervals.
 */
import { z } from 'zod';
import { REPORT_LIFETIME_INTERVALS, type DemandReport, type PoolDemand } from '../domain/autoscale.js';

export const storedDemandSchema = z.object({
  pool: z.string(),
  gateway: z.string(),
  sequence: z.number(),
  inFlight: z.number(),
  startedPerSecond: z.number(),
  waiting: z.number(),
  held: z.array(z.string()),
  /** When the API took it, and when it stops counting (epoch ms). */
  at: z.number(),
  expiresAtMs: z.number(),
});
export type StoredDemand = z.infer<typeof storedDemandSchema>;

/** What recording one report did. */
export interface DemandOutcome {
  /** False for a report whose sequence is not above the stored one (a duplicate, or late). */
  applied: boolean;
  /** Whether the pool should be reconciled now rather than at its next interval (see {@link wantsReconcile}). */
  kick: boolean;
}

/** The document id: `.` cannot appear in a pool name or a gateway id, so no two pairs share one. */
export const demandId = (pool: string, gateway: string) => `${pool}.${gateway}`;

export const isLive = (d: StoredDemand, now: number) => d.expiresAtMs > now;

/** The document a report makes, or undefined when the stored one is as new or newer. */
export function demandStep(
  stored: StoredDemand | undefined,
  pool: string,
  report: DemandReport,
  now: number,
): { write?: StoredDemand; outcome: DemandOutcome } {
  if (stored && stored.sequence >= report.sequence) return { outcome: { applied: false, kick: false } };
  const { intervalSeconds, ...rest } = report;
  const write: StoredDemand = {
    ...rest,
    pool,
    at: now,
    expiresAtMs: now + REPORT_LIFETIME_INTERVALS * intervalSeconds * 1000,
  };
  const previous = stored && isLive(stored, now) ? stored : undefined;
  return { write, outcome: { applied: true, kick: wantsReconcile(previous, write) } };
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
