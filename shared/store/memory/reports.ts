/**
 * Reports from traffic in memory: the rules of report-rules.ts, in one optimistic transaction over
 * the proxy and its event, on the database shared with a MemoryProxyRepository; the caller's
 * budgets beside it, as the Firestore repository keeps them.
 */
import { randomUUID } from 'node:crypto';
import { proxyDocSchema } from '../../domain/status.js';
import { EVENT_RETENTION_MS } from '../records.js';
import type { ReportRepository } from '../ports.js';
import {
  banBudgetId,
  CallerMinutes,
  reportEventId,
  reportStep,
  type RecordOutcome,
  type ReportInput,
} from '../report-rules.js';
import { transaction } from './optimistic.js';
import type { MemoryState } from './state.js';

export class MemoryReportRepository implements ReportRepository {
  private readonly minutes = new CallerMinutes();
  /** `banBudgets/{caller}-{hour}`: the bans each caller's reports caused in an hour. */
  private readonly bans = new Map<string, number>();

  /** @param state - the database shared with the MemoryProxyRepository the reports count on */
  constructor(private readonly state: MemoryState) {}

  private reads(input: ReportInput, eventId: string): unknown[] {
    const trail = this.state.proxyEvents.get(input.proxy) ?? [];
    return [this.state.proxies.get(input.proxy), trail.some((e) => e.id === eventId)];
  }

  async record(input: ReportInput): Promise<RecordOutcome> {
    const { proxy, caller, report, now, policy } = input;
    const refused = this.minutes.refusal(caller, now, policy.perCallerPerMinute);
    if (refused) return refused;
    const eventId = report.requestId ? reportEventId(caller, report.requestId) : randomUUID();
    const budget = banBudgetId(caller, now);
    const mayBan = report.reason !== 'banned' || (this.bans.get(budget) ?? 0) < policy.bansPerCallerPerHour;
    const attempt = () => {
      const seen = this.reads(input, eventId);
      const row = this.state.proxies.get(proxy);
      const parsed = row ? proxyDocSchema.safeParse(structuredClone(row.doc)) : undefined;
      const doc = parsed?.success ? parsed.data : undefined;
      const duplicate = (this.state.proxyEvents.get(proxy) ?? []).some((e) => e.id === eventId);
      const { outcome, writes } = reportStep(doc, duplicate, mayBan, input);
      const commit = (): RecordOutcome => {
        if (!writes || !doc) return outcome;
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
    const outcome = await transaction(attempt, () => this.reads(input, eventId));
    if (outcome.kind !== 'recorded') return outcome;
    this.minutes.spend(caller, now);
    if (outcome.banned) this.bans.set(budget, (this.bans.get(budget) ?? 0) + 1);
    return outcome;
  }
}
