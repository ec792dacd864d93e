/**
 * Pools, provider verdicts and traffic reports, for every store (run inside
 * `describe('store contract: <name>')`): ordering, the pool reconcile transaction, budgets.
 */
import { describe, expect, it } from 'vitest';
import { POOL_LABEL, type PoolApplyRequest } from '../../shared/domain/pool.js';
import type {
  PoolRepository,
  ProviderStatusRepository,
  ProxyRepository,
  RelayRepository,
  ReportRepository,
} from '../../shared/store/ports.js';
import type { ReportInput } from '../../shared/store/report-rules.js';

/** The repositories of one store, sharing one database. */
export interface Stores {
  proxies: ProxyRepository;
  relays: RelayRepository;
  pools: PoolRepository;
  providerStatus: ProviderStatusRepository;
  reports: ReportRepository;
}

const T = Date.UTC(2026, 5, 1);
const pool = (name: string, replicas = 1, labels: Record<string, string> = {}): PoolApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name, labels },
  spec: {
    replicas,
    maxSurge: 1,
    template: { metadata: { labels: { team: 'crawl' } }, spec: { provider: 'local', placement: {}, port: 0 } },
  },
});
const policy = {
  excludeMs: 600_000,
  banTargets: 3,
  banWindowMs: 3_600_000,
  perCallerPerMinute: 2,
  bansPerCallerPerHour: 1,
};
const reportOf = (proxy: string, requestId?: string, now = T): ReportInput => ({
  proxy,
  caller: 'c'.repeat(64),
  report: { reason: 'blocked', target: 'example.com', ...(requestId ? { requestId } : {}) },
  now,
  policy,
});
const proxyRequest = (name: string) => ({
  apiVersion: 'egress.dev/v1' as const,
  kind: 'Proxy' as const,
  action: 'apply' as const,
  metadata: { name, labels: {} },
  spec: { provider: 'local', placement: {}, port: 0 },
});

export function moreContract(open: () => Promise<Stores>): void {
  describe('pools', () => {
    it('orders requests as proxies are: a label change is a new generation; a delete leaves a tombstone', async () => {
      const { pools } = await open();
      expect(await pools.apply(pool('p-a'), T + 10, T)).toBe('created');
      expect(await pools.apply(pool('p-a'), T + 10, T)).toBe('unchanged');
      expect(await pools.apply(pool('p-a', 2), T + 5, T)).toBe('stale');
      expect(await pools.apply(pool('p-a', 1, { team: 'x' }), T + 20, T)).toBe('updated');
      expect(await pools.get('p-a')).toMatchObject({ generation: 2, requestTime: T + 20 });
      expect(await pools.requestDelete('p-a', T + 30, T)).toBe('marked');
      expect(await pools.requestDelete('p-a', T + 40, T)).toBe('already');
      expect(await pools.apply(pool('p-a'), T + 35, T)).toBe('stale');
      expect(await pools.requestDelete('p-b', T + 10, T)).toBe('absent');
      expect(await pools.apply(pool('p-b'), T + 5, T)).toBe('stale');
      expect(await pools.names()).toEqual(['p-a']);
      expect((await pools.list()).map((p) => p.metadata.name)).toEqual(['p-a']);
    });

    it('a reconcile creates labelled members with credentials, drains them, and finalises the pool', async () => {
      const { pools, proxies } = await open();
      await pools.apply(pool('p-c', 2), T, T);
      const create = [{ spec: pool('p-c').spec.template.spec, labels: { team: 'crawl' } }];
      const { created } = await pools.reconcile(
        'p-c',
        () => T,
        () => ({
          writes: { create: [...create, ...create], drain: [] },
          result: 1,
        }),
      );
      expect(created).toHaveLength(2);
      const members = await pools.members('p-c');
      expect(members.map((m) => m.metadata.name).sort()).toEqual([...created].sort());
      expect(members[0]?.metadata.labels).toEqual({ team: 'crawl', [POOL_LABEL]: 'p-c' });
      expect(await proxies.credentials(created[0] ?? '')).toBeDefined();
      await pools.reconcile(
        'p-c',
        () => T + 1,
        () => ({ writes: { create: [], drain: [created[0] ?? ''] }, result: 0 }),
      );
      const drained = (await proxies.get(created[0] ?? ''))?.doc;
      expect(drained).toMatchObject({ generation: 2, deletionRequestedAt: new Date(T + 1).toISOString() });
      await pools.addEvent('p-c', { at: new Date(T).toISOString(), type: 'Normal', reason: 'R', message: 'm' }, 5);
      expect((await pools.events('p-c')).map((e) => e.reason)).toEqual(['R']);
      await pools.requestDelete('p-c', T + 10, T + 10);
      await pools.reconcile(
        'p-c',
        () => T + 11,
        () => ({ writes: { create: [], drain: [], finalise: true }, result: 0 }),
      );
      await pools.removeEvents('p-c');
      expect(await pools.get('p-c')).toBeUndefined();
      expect(await pools.events('p-c')).toEqual([]);
      expect(await pools.apply(pool('p-c'), T + 5, T)).toBe('stale');
    });

    it('two reconciles decided on one read do not both commit: the second decides again', async () => {
      const { pools } = await open();
      await pools.apply(pool('p-d'), T, T);
      const one = { spec: pool('p-d').spec.template.spec, labels: {} };
      const fill = () =>
        pools.reconcile(
          'p-d',
          () => T,
          (_pool, members) => ({
            writes: { create: members.length < 1 ? [one] : [], drain: [], status: undefined },
            result: members.length,
          }),
        );
      await Promise.all([fill(), fill(), fill()]);
      expect(await pools.members('p-d')).toHaveLength(1);
    });

    it('each attempt reads the clock again: a member made on a retry carries the time that attempt saw', async () => {
      const { pools } = await open();
      await pools.apply(pool('p-t', 2), T, T);
      const one = { spec: pool('p-t').spec.template.spec, labels: {} };
      let tick = T;
      const seen: number[] = [];
      // Two reconciles decided on one read of an empty pool: one commits, the other is decided
      // again on the member the first made (where the store retries) and makes the second one.
      const fill = () =>
        pools.reconcile(
          'p-t',
          () => (tick += 1000),
          (_pool, members, now) => {
            seen.push(now);
            return { writes: { create: members.length < 2 ? [one] : [], drain: [] }, result: now };
          },
        );
      const [a, b] = await Promise.all([fill(), fill()]);
      const stamps = (await pools.members('p-t')).map((m) => Date.parse(m.createdAt)).sort();
      const decided = [a, b].filter((r) => r.created.length === 1).map((r) => r.result);
      expect(stamps).toEqual(decided.sort());
      expect(new Set(seen).size, `every attempt its own reading: ${seen.join(', ')}`).toBe(seen.length);
    });
  });

  describe('provider verdicts', () => {
    it('the latest verdict per provider, every one in name order', async () => {
      const { providerStatus } = await open();
      const verdict = (name: string, status: 'Healthy' | 'Unhealthy') => ({
        name,
        type: 'process',
        status,
        message: status,
        latencyMs: 1,
        lastCheckAt: new Date(T).toISOString(),
      });
      await providerStatus.write(verdict('b', 'Healthy'));
      await providerStatus.write(verdict('a', 'Healthy'));
      await providerStatus.write(verdict('b', 'Unhealthy'));
      expect(await providerStatus.get('b')).toMatchObject({ status: 'Unhealthy' });
      expect(await providerStatus.get('c')).toBeUndefined();
      expect((await providerStatus.all()).map((v) => `${v.name}=${v.status}`)).toEqual(['a=Healthy', 'b=Unhealthy']);
    });
  });

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
        policy,
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
