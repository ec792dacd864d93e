/**
 * Reports from traffic in memory: the rules of report-rules.ts, in one optimistic transaction over
 * the proxy, its event and the caller's budget, on the database shared with a MemoryProxyRepository.
 */
import { randomUUID } from 'node:crypto';
import { proxyDocSchema } from '../../domain/status.js';
import { EVENT_RETENTION_MS } from '../events.js';
import type { ReportRepository } from '../ports.js';
import { reportEventId, reportStep, type RecordOutcome, type ReportInput, type ReportLimit } from '../report-rules.js';
import { transaction } from './optimistic.js';
import type { MemoryState } from './state.js';

export class MemoryReportRepository implements ReportRepository {
  /** `reportLimits/{caller}`: each caller's budget for its current minute. */
  private readonly limits = new Map<string, ReportLimit>();

  /** @param state - the database shared with the MemoryProxyRepository the reports count on */
  constructor(private readonly state: MemoryState) {}

  private reads(input: ReportInput, eventId: string): unknown[] {
    const trail = this.state.proxyEvents.get(input.proxy) ?? [];
    return [this.state.proxies.get(input.proxy), trail.some((e) => e.id === eventId), this.limits.get(input.caller)];
  }

  record(input: ReportInput): Promise<RecordOutcome> {
    const { proxy, caller, report, now } = input;
    const eventId = report.requestId ? reportEventId(caller, report.requestId) : randomUUID();
    const attempt = () => {
      const seen = this.reads(input, eventId);
      const row = this.state.proxies.get(proxy);
      const parsed = row ? proxyDocSchema.safeParse(structuredClone(row.doc)) : undefined;
      const doc = parsed?.success ? parsed.data : undefined;
      const duplicate = (this.state.proxyEvents.get(proxy) ?? []).some((e) => e.id === eventId);
      const { outcome, writes } = reportStep(doc, duplicate, this.limits.get(caller) ?? {}, input);
      const commit = (): RecordOutcome => {
        if (!writes || !doc) return outcome;
        this.limits.set(caller, writes.limit);
        const event = { ...writes.event, expireAt: new Date(now + EVENT_RETENTION_MS), id: eventId };
        this.state.proxyEvents.set(proxy, [...(this.state.proxyEvents.get(proxy) ?? []), event]);
        const status = { ...doc.status, reports: writes.reports };
        if (writes.ban) status.ban = writes.ban;
        else delete status.ban;
        this.state.proxies.set(proxy, this.state.row({ ...doc, status }));
        return outcome;
      };
      return { seen, commit };
    };
    return transaction(attempt, () => this.reads(input, eventId));
  }
}
