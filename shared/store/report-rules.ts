/**
 * The traffic-report rules, once: duplicates by request id, the caller's budgets, and what a
 * counted report writes. Pure functions of what was read; the Firestore and in-memory report
 * repositories read the proxy and its event in one transaction, call these, and write what they
 * return. The budgets are kept apart from that transaction: one document every report of a caller
 * read and wrote was the control plane's hottest lock (docs/guarantees.md, "Converge after chaos").
 */
import { createHash } from 'node:crypto';
import { countReport, type ReportOutcome, type ReportPolicy, type ReportRequest } from '../domain/reports.js';
import type { ProxyDoc, ProxyStatus } from '../domain/status.js';
import { clip } from '../domain/text.js';
import type { ProxyEvent } from './records.js';

/** What recording one report came to. */
export type RecordOutcome =
  | { kind: 'notFound' }
  /** The caller spent its budget for this window; try again after that many seconds. */
  | { kind: 'limited'; retryAfterSeconds: number; limit: number }
  /** A report with this request id from this caller was counted already. */
  | { kind: 'duplicate' }
  | ({ kind: 'recorded' } & ReportOutcome);

/** The caller budgets of `config.reports`. */
export interface ReportBudgets {
  /** Reports a caller may send a minute (kept in the process: approximate across API instances). */
  perCallerPerMinute: number;
  /** Bans a caller's reports may cause an hour (kept in the store: `banBudgets/{caller}-{hour}`). */
  bansPerCallerPerHour: number;
}

/** One report to record. */
export interface ReportInput {
  proxy: string;
  /** Who sent it (a digest of the bearer token: never the token). */
  caller: string;
  report: ReportRequest;
  now: number;
  policy: ReportPolicy & ReportBudgets;
}

/** A caller's budget: `count` reports in the minute from `windowStart`. */
export interface ReportLimit {
  windowStart: number;
  count: number;
}

const WINDOW_MS = 60_000;
const HOUR_MS = 3_600_000;
/** Callers whose minute is remembered; callers are API tokens, so a handful, but the map stays bounded. */
const MAX_CALLERS = 10_000;

/**
 * Each caller's reports in its current minute, in this process. Nothing in the store: every
 * report of a caller reading and writing one document serialised them all on its lock. The bound
 * is per process, so across API instances a caller may send up to `perCallerPerMinute` times the
 * instance count (docs/api.md, "Reports").
 */
export class CallerMinutes {
  private readonly windows = new Map<string, ReportLimit>();

  /** The 429 a report over budget gets, or undefined when the caller may report. */
  refusal(caller: string, now: number, perMinute: number): Extract<RecordOutcome, { kind: 'limited' }> | undefined {
    const limit = this.windows.get(caller);
    const inWindow = limit !== undefined && now - limit.windowStart < WINDOW_MS && now >= limit.windowStart;
    if (!inWindow || limit.count < perMinute) return undefined;
    const retryAfterSeconds = Math.max(1, Math.ceil((limit.windowStart + WINDOW_MS - now) / 1000));
    return { kind: 'limited', retryAfterSeconds, limit: perMinute };
  }

  /** Counts one report against the caller's minute. */
  spend(caller: string, now: number): void {
    const limit = this.windows.get(caller);
    const inWindow = limit !== undefined && now - limit.windowStart < WINDOW_MS && now >= limit.windowStart;
    this.windows.delete(caller);
    if (this.windows.size >= MAX_CALLERS) {
      const oldest = this.windows.keys().next();
      if (!oldest.done) this.windows.delete(oldest.value);
    }
    this.windows.set(
      caller,
      inWindow ? { windowStart: limit.windowStart, count: limit.count + 1 } : { windowStart: now, count: 1 },
    );
  }
}

/** The id of a caller's ban budget for the hour `now` falls in (`banBudgets/{id}`). */
export function banBudgetId(caller: string, now: number): string {
  return `${caller}-${Math.floor(now / HOUR_MS)}`;
}

/** When a ban budget document may be removed (a TTL field): an hour after its hour ended. */
export function banBudgetExpiry(now: number): Date {
  return new Date((Math.floor(now / HOUR_MS) + 2) * HOUR_MS);
}
const iso = (ms: number) => new Date(ms).toISOString();

/** The event id of a report with a request id: the same for a retry, distinct per caller. */
export function reportEventId(caller: string, requestId: string): string {
  return `report-${createHash('sha256').update(`${caller}\n${requestId}`).digest('hex').slice(0, 40)}`;
}

/** The event a report leaves in `proxies/{name}/events`. */
function reportEvent(input: ReportInput, outcome: ReportOutcome): ProxyEvent {
  const { report, caller, now } = input;
  const about = report.target ? ` for ${report.target}` : '';
  const detail = report.detail ? `: ${clip(report.detail, 512)}` : '';
  const effect = outcome.banned
    ? `; the instance is banned (status.ban: ${outcome.ban?.reason ?? 'reported banned'}) and will be replaced`
    : outcome.withheld
      ? "; it would ban the instance, but this caller's bans this hour are spent (reports.bansPerCallerPerHour): counted only"
      : outcome.stale
        ? '; about an earlier instance (or none is up): counted only'
        : '';
  return {
    at: iso(now),
    type: 'Warning',
    reason: `Report:${report.reason}`,
    message: `reported ${report.reason}${about} by caller ${caller.slice(0, 8)}${detail}${effect}`,
  };
}

/** What a counted report writes: its event, and the status's report-owned fields. */
export interface ReportWrites {
  event: ProxyEvent;
  reports: ProxyStatus['reports'];
  /** undefined: the ban is cleared. */
  ban: ProxyStatus['ban'];
}

/**
 * One report against what the transaction read: the proxy (undefined when absent or corrupt) and
 * whether its event exists already.
 *
 * @param mayBan - whether the caller's ban budget allows one more ban (read outside the transaction)
 */
export function reportStep(
  doc: ProxyDoc | undefined,
  seen: boolean,
  mayBan: boolean,
  input: ReportInput,
): { outcome: RecordOutcome; writes?: ReportWrites } {
  const { report, now, policy } = input;
  if (!doc) return { outcome: { kind: 'notFound' } };
  if (seen) return { outcome: { kind: 'duplicate' } };
  const { status } = doc;
  const observed = report.observedAt ? Date.parse(report.observedAt) : now;
  const instance = status.instance
    ? { createdAt: Date.parse(status.instance.createdAt), egressIp: status.health?.egressIp }
    : undefined;
  const counted = countReport(status, report, Math.min(observed, now), instance, now, policy, mayBan);
  const writes: ReportWrites = {
    event: reportEvent(input, counted),
    reports: counted.reports,
    ban: counted.ban,
  };
  return { outcome: { kind: 'recorded', ...counted }, writes };
}
