/**
 * The traffic-report rules, once: duplicates by request id, the caller's budget per minute, and
 * what a counted report writes. Pure functions of what was read; the Firestore and in-memory report
 * repositories read in one transaction, call these, and write what they return.
 */
import { createHash } from 'node:crypto';
import { countReport, type ReportOutcome, type ReportPolicy, type ReportRequest } from '../domain/reports.js';
import type { ProxyDoc, ProxyStatus } from '../domain/status.js';
import { clip } from '../domain/text.js';
import type { ProxyEvent } from './events.js';

/** What recording one report came to. */
export type RecordOutcome =
  | { kind: 'notFound' }
  /** The caller spent its budget for this window; try again after that many seconds. */
  | { kind: 'limited'; retryAfterSeconds: number; limit: number }
  /** A report with this request id from this caller was counted already. */
  | { kind: 'duplicate' }
  | ({ kind: 'recorded' } & ReportOutcome);

/** One report to record. */
export interface ReportInput {
  proxy: string;
  /** Who sent it (a digest of the bearer token: never the token). */
  caller: string;
  report: ReportRequest;
  now: number;
  policy: ReportPolicy & { perCallerPerMinute: number };
}

/** A caller's budget: `count` reports in the minute from `windowStart`. */
export interface ReportLimit {
  windowStart: number;
  count: number;
}

const WINDOW_MS = 60_000;
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

/** What a counted report writes: the caller's budget, its event, and the status's report-owned fields. */
export interface ReportWrites {
  limit: ReportLimit;
  event: ProxyEvent;
  reports: ProxyStatus['reports'];
  /** undefined: the ban is cleared. */
  ban: ProxyStatus['ban'];
}

/**
 * One report against what the transaction read: the proxy (undefined when absent or corrupt),
 * whether its event exists already, and the caller's budget. A report over budget is refused
 * before anything is written.
 */
export function reportStep(
  doc: ProxyDoc | undefined,
  seen: boolean,
  limit: { windowStart?: unknown; count?: unknown },
  input: ReportInput,
): { outcome: RecordOutcome; writes?: ReportWrites } {
  const { report, now, policy } = input;
  if (!doc) return { outcome: { kind: 'notFound' } };
  if (seen) return { outcome: { kind: 'duplicate' } };
  const windowStart = Number(limit.windowStart ?? 0);
  const inWindow = now - windowStart < WINDOW_MS && now >= windowStart;
  const count = inWindow ? Number(limit.count ?? 0) : 0;
  if (count >= policy.perCallerPerMinute) {
    const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000));
    return { outcome: { kind: 'limited', retryAfterSeconds, limit: policy.perCallerPerMinute } };
  }
  const { status } = doc;
  const observed = report.observedAt ? Date.parse(report.observedAt) : now;
  const instance = status.instance
    ? { createdAt: Date.parse(status.instance.createdAt), egressIp: status.health?.egressIp }
    : undefined;
  const counted = countReport(status, report, Math.min(observed, now), instance, now, policy);
  const writes: ReportWrites = {
    limit: { windowStart: inWindow ? windowStart : now, count: count + 1 },
    event: reportEvent(input, counted),
    reports: counted.reports,
    ban: counted.ban,
  };
  return { outcome: { kind: 'recorded', ...counted }, writes };
}
