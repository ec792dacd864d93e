/**
 * Reports from traffic on `proxies/{name}` (report-rules.ts): one transaction counts the report on
 * the status, adds its event (named by the request id, so a retry counts once) and spends the
 * caller's budget.
 */
import { FieldValue, type Firestore } from '@google-cloud/firestore';
import { proxyDocSchema } from '../domain/status.js';
import { abortIfClosed } from './grpc-codes.js';
import { changeStamp, COLLECTIONS } from './firestore.js';
import { EVENT_RETENTION_MS } from './events.js';
import type { ReportRepository } from './ports.js';
import { reportEventId, reportStep, type RecordOutcome, type ReportInput } from './report-rules.js';

export { reportEventId, type RecordOutcome, type ReportInput } from './report-rules.js';

export class ReportStore implements ReportRepository {
  constructor(private readonly db: Firestore) {}

  async record(input: ReportInput): Promise<RecordOutcome> {
    const { proxy, caller, report, now } = input;
    const proxyRef = this.db.collection(COLLECTIONS.proxies).doc(proxy);
    const eventsRef = proxyRef.collection('events');
    const eventRef = report.requestId ? eventsRef.doc(reportEventId(caller, report.requestId)) : eventsRef.doc();
    const limitRef = this.db.collection(COLLECTIONS.reportLimits).doc(caller);
    return this.db.runTransaction(async (tx) => {
      const [snap, seen, limit] = await abortIfClosed(
        Promise.all([tx.get(proxyRef), tx.get(eventRef), tx.get(limitRef)]),
      );
      const parsed = snap.exists ? proxyDocSchema.safeParse(snap.data()) : undefined;
      const doc = parsed?.success ? parsed.data : undefined;
      const { outcome, writes } = reportStep(doc, seen.exists, limit.data() ?? {}, input);
      if (!writes) return outcome;
      tx.set(limitRef, writes.limit);
      tx.create(eventRef, { ...writes.event, expireAt: new Date(now + EVENT_RETENTION_MS) });
      tx.update(proxyRef, {
        'status.reports': writes.reports,
        'status.ban': writes.ban ?? FieldValue.delete(),
        ...changeStamp(),
      });
      return outcome;
    });
  }
}
