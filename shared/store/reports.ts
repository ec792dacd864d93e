/**
 * Reports from traffic on `proxies/{name}`: one transaction counts the report on the status, adds
 * its event (named by the request id, so a retry counts once) and spends the caller's budget.
 */
import { createHash } from 'node:crypto';
import { FieldValue, type Firestore } from '@google-cloud/firestore';
import { countReport, type ReportOutcome, type ReportPolicy, type ReportRequest } from '../domain/reports.js';
import { proxyDocSchema } from '../domain/status.js';
import { clip } from '../domain/text.js';
import { COLLECTIONS } from './firestore.js';
import { EVENT_RETENTION_MS, type ProxyEvent } from './proxies.js';

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

export class ReportStore {
  constructor(private readonly db: Firestore) {}

  /**
   * Records one report. A report arriving again with the same `requestId` from the same caller is
   * a duplicate (counted once, no budget spent); a report over the caller's budget is refused
   * before anything is written.
   */
  async record(input: ReportInput): Promise<RecordOutcome> {
    const { proxy, caller, report, now, policy } = input;
    const proxyRef = this.db.collection(COLLECTIONS.proxies).doc(proxy);
    const eventsRef = proxyRef.collection('events');
    const eventRef = report.requestId ? eventsRef.doc(reportEventId(caller, report.requestId)) : eventsRef.doc();
    const limitRef = this.db.collection(COLLECTIONS.reportLimits).doc(caller);
    return this.db.runTransaction(async (tx) => {
      const [snap, seen, limit] = await Promise.all([tx.get(proxyRef), tx.get(eventRef), tx.get(limitRef)]);
      const parsed = snap.exists ? proxyDocSchema.safeParse(snap.data()) : undefined;
      if (!parsed?.success) return { kind: 'notFound' };
      if (seen.exists) return { kind: 'duplicate' };
      const windowStart = Number(limit.get('windowStart') ?? 0);
      const inWindow = now - windowStart < WINDOW_MS && now >= windowStart;
      const count = inWindow ? Number(limit.get('count') ?? 0) : 0;
      if (count >= policy.perCallerPerMinute) {
        const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + WINDOW_MS - now) / 1000));
        return { kind: 'limited', retryAfterSeconds, limit: policy.perCallerPerMinute };
      }
      const { status } = parsed.data;
      const observed = report.observedAt ? Date.parse(report.observedAt) : now;
      const instance = status.instance
        ? { createdAt: Date.parse(status.instance.createdAt), egressIp: status.health?.egressIp }
        : undefined;
      const outcome = countReport(status, report, Math.min(observed, now), instance, now, policy);
      tx.set(limitRef, { windowStart: inWindow ? windowStart : now, count: count + 1 });
      tx.create(eventRef, {
        ...reportEvent(input, outcome),
        expireAt: new Date(now + EVENT_RETENTION_MS),
      });
      tx.update(proxyRef, {
        'status.reports': outcome.reports,
        'status.ban': outcome.ban ?? FieldValue.delete(),
      });
      return { kind: 'recorded', ...outcome };
    });
  }
}
