/**
 * `ReportRepository` for every store (run inside `describe('store contract: <name>')`): traffic
 * reports counted once per request id, within the caller's rate and ban budgets.
 */
import { describe, expect, it } from 'vitest';
import type { ProxyRepository, ReportRepository } from '../../shared/store/ports.js';
import type { ReportInput } from '../../shared/store/report-rules.js';
import { proxyRequest, REPORT_POLICY, T } from './store-contract-requests.js';

const reportOf = (proxy: string, requestId?: string, now = T): ReportInput => ({
  proxy,
  caller: 'c'.repeat(64),
  report: { reason: 'blocked', target: 'example.com', ...(requestId ? { requestId } : {}) },
  now,
  policy: REPORT_POLICY,
});

export function reportContract(open: () => Promise<{ reports: ReportRepository; proxies: ProxyRepository }>): void {
  describe('reports', () => {
    it('counts once per request id, within the caller budget, with an event', async () => {
      const { reports, proxies } = await open();
      expect(await reports.record(reportOf('gone'))).toEqual({ kind: 'notFound' });
      await proxies.apply(proxyRequest('rp-1'), T, T);
      expect(await reports.record(reportOf('rp-1', 'q1'))).toMatchObject({ kind: 'recorded' });
      expect(await reports.record(reportOf('rp-1', 'q1'))).toEqual({ kind: 'duplicate' });
      expect((await proxies.get('rp-1'))?.doc.status.reports).toMatchObject({ blocked: 1 });
      expect((await proxies.events('rp-1')).map((e) => e.reason)).toEqual(['Report:blocked']);
      expect(await reports.record(reportOf('rp-1', 'q2', T + 1000))).toMatchObject({ kind: 'recorded' });
      expect(await reports.record(reportOf('rp-1', 'q3', T + 2000))).toEqual({
        kind: 'limited',
        retryAfterSeconds: 58,
        limit: 2,
      });
      expect(await reports.record(reportOf('rp-1', 'q3', T + 60_000))).toMatchObject({ kind: 'recorded' });
    });

    it("a caller's bans an hour are bounded: past them a banning report is counted, not a ban", async () => {
      const { reports, proxies } = await open();
      const banning = (proxy: string, now: number): ReportInput => ({
        proxy,
        caller: 'b'.repeat(64),
        report: { reason: 'banned' },
        now,
        policy: REPORT_POLICY,
      });
      const hour = Math.ceil(T / 3_600_000) * 3_600_000;
      for (const name of ['rb-1', 'rb-2', 'rb-3']) {
        await proxies.apply(proxyRequest(name), hour, hour);
        const status = {
          phase: 'Ready' as const,
          observedGeneration: 1,
          conditions: [],
          instance: {
            name: `i-${name}`,
            ip: '10.0.0.1',
            port: 1,
            state: 'Running' as const,
            createdAt: new Date(hour - 60_000).toISOString(),
            specHash: 'h',
          },
        };
        expect(await proxies.writeStatus(name, 1, status, hour)).toBe(true);
      }
      expect(await reports.record(banning('rb-1', hour + 1000))).toMatchObject({ kind: 'recorded', banned: true });
      expect(await reports.record(banning('rb-2', hour + 2000))).toMatchObject({
        kind: 'recorded',
        banned: false,
        withheld: true,
      });
      expect((await proxies.get('rb-2'))?.doc.status).toMatchObject({ reports: { banned: 1 } });
      expect((await proxies.get('rb-2'))?.doc.status.ban).toBeUndefined();
      expect((await proxies.events('rb-2'))[0]?.message).toMatch(/bans this hour are spent/);
      // The next hour brings a fresh budget.
      expect(await reports.record(banning('rb-3', hour + 3_600_000))).toMatchObject({ banned: true });
    });
  });
}
