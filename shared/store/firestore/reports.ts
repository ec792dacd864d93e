/**
 * Reports from traffic on `proxies/{name}` (report-rules.ts): the proxy and the report's event are
 * read, and the count on the status and the event (named by the request id, so a retry counts once)
 * written in one batch preconditioned on the proxy's update time: no transaction, so no lock for
 * other writers of the proxy to queue on. The caller's budgets stay out of it: the minute's in this
 * process, the hour's bans in `banBudgets/{caller}-{hour}`, read before and added to after.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { FieldValue, type Firestore } from '@google-cloud/firestore';
import { proxyDocSchema } from '../../domain/status.js';
import type { Logger } from '../../logger.js';
import { grpcCode, GRPC_CODES } from '../grpc-codes.js';
import { changeStamp, COLLECTIONS } from './client.js';
import { EVENT_RETENTION_MS } from '../records.js';
import type { ReportRepository } from '../ports.js';
import {
  banBudgetExpiry,
  banBudgetId,
  CallerMinutes,
  reportEventId,
  reportStep,
  type RecordOutcome,
  type ReportInput,
} from '../report-rules.js';
import { CallerGone, logTransaction, reasonOf, type TransactionRecord } from './transaction.js';

/** Reads and writes of one report before it gives up as ABORTED (each lost only to a write in between). */
const ATTEMPTS = 10;

export class FirestoreReportRepository implements ReportRepository {
  private readonly minutes = new CallerMinutes();

  constructor(
    private readonly db: Firestore,
    private readonly logger: Logger,
  ) {}

  async record(input: ReportInput, signal?: AbortSignal): Promise<RecordOutcome> {
    const { caller, report, now, policy } = input;
    const refused = this.minutes.refusal(caller, now, policy.perCallerPerMinute);
    if (refused) return refused;
    const budgetRef = this.db.collection(COLLECTIONS.banBudgets).doc(banBudgetId(caller, now));
    // Only a "banned" report can ban. Two racing may both pass the check: the bound is approximate, the read never a lock.
    const mayBan =
      report.reason !== 'banned' || Number((await budgetRef.get()).get('count') ?? 0) < policy.bansPerCallerPerHour;
    const outcome = await this.count(input, mayBan, signal);
    if (outcome.kind !== 'recorded') return outcome;
    this.minutes.spend(caller, now);
    if (outcome.banned)
      await budgetRef.set({ count: FieldValue.increment(1), expireAt: banBudgetExpiry(now) }, { merge: true });
    return outcome;
  }

  /** Reads, decides and writes preconditioned until nothing was written in between (report-rules.ts#reportStep). */
  private async count(input: ReportInput, mayBan: boolean, signal?: AbortSignal): Promise<RecordOutcome> {
    const { proxy, caller, report, now } = input;
    const proxyRef = this.db.collection(COLLECTIONS.proxies).doc(proxy);
    const eventsRef = proxyRef.collection('events');
    const eventRef = report.requestId ? eventsRef.doc(reportEventId(caller, report.requestId)) : eventsRef.doc();
    const started = Date.now();
    const retryReasons: string[] = [];
    let attempts = 0;
    const line = (outcome: TransactionRecord['outcome'], wrote: boolean): TransactionRecord => ({
      kind: 'report',
      reads: [proxyRef.path, eventRef.path],
      writes: wrote ? [proxyRef.path, eventRef.path] : [],
      attempts,
      waitMs: Date.now() - started,
      retryReasons,
      outcome,
    });
    for (;;) {
      if (signal?.aborted) throw new CallerGone();
      attempts++;
      const [snap, seen] = await this.db.getAll(proxyRef, eventRef);
      const parsed = snap?.exists ? proxyDocSchema.safeParse(snap.data()) : undefined;
      const doc = parsed?.success ? parsed.data : undefined;
      const { outcome, writes } = reportStep(doc, seen?.exists ?? false, mayBan, input);
      if (!writes || !snap?.updateTime) {
        logTransaction(this.logger, line('committed', false));
        return outcome;
      }
      const batch = this.db.batch();
      batch.create(eventRef, { ...writes.event, expireAt: new Date(now + EVENT_RETENTION_MS) });
      batch.update(
        proxyRef,
        { 'status.reports': writes.reports, 'status.ban': writes.ban ?? FieldValue.delete(), ...changeStamp() },
        { lastUpdateTime: snap.updateTime },
      );
      try {
        await batch.commit();
        logTransaction(this.logger, line('committed', true));
        return outcome;
      } catch (err) {
        const code = grpcCode(err);
        // The same report (its request id) was counted in between: this one is its duplicate.
        if (code === GRPC_CODES.ALREADY_EXISTS) {
          logTransaction(this.logger, line('committed', false));
          return { kind: 'duplicate' };
        }
        retryReasons.push(reasonOf(err));
        if (code !== GRPC_CODES.FAILED_PRECONDITION || attempts >= ATTEMPTS) {
          logTransaction(this.logger, line('failed', false), err);
          if (code !== GRPC_CODES.FAILED_PRECONDITION) throw err;
          throw Object.assign(
            new Error(`too much contention on ${proxyRef.path}: written ${attempts} times while a report was counted`),
            {
              code: GRPC_CODES.ABORTED,
            },
          );
        }
        // Written in between (a check's status, another report): decide again, a moment apart from the others.
        await sleep(Math.random() * 20 * attempts);
      }
    }
  }
}
