/**
 * `PoolRepository` for every store (run inside `describe('store contract: <name>')`): requests
 * ordered as proxies' are, and the reconcile transaction that creates and drains members.
 */
import { describe, expect, it } from 'vitest';
import { POOL_LABEL } from '../../shared/domain/pool.js';
import { initialStatus } from '../../shared/domain/status.js';
import type { PoolRepository, ProxyRepository } from '../../shared/store/ports.js';
import { poolRequest, T } from './store-contract-requests.js';

export function poolContract(open: () => Promise<{ pools: PoolRepository; proxies: ProxyRepository }>): void {
  describe('pools', () => {
    it('orders requests as proxies are: a label change is a new generation; a delete leaves a tombstone', async () => {
      const { pools } = await open();
      expect(await pools.apply(poolRequest('p-a'), T + 10, T)).toBe('created');
      expect(await pools.apply(poolRequest('p-a'), T + 10, T)).toBe('unchanged');
      expect(await pools.apply(poolRequest('p-a', 2), T + 5, T)).toBe('stale');
      expect(await pools.apply(poolRequest('p-a', 1, { team: 'x' }), T + 20, T)).toBe('updated');
      expect(await pools.get('p-a')).toMatchObject({ generation: 2, requestTime: T + 20 });
      expect(await pools.requestDelete('p-a', T + 30, T)).toBe('marked');
      expect(await pools.requestDelete('p-a', T + 40, T)).toBe('already');
      expect(await pools.apply(poolRequest('p-a'), T + 35, T)).toBe('stale');
      expect(await pools.requestDelete('p-b', T + 10, T)).toBe('absent');
      expect(await pools.apply(poolRequest('p-b'), T + 5, T)).toBe('stale');
      expect(await pools.names()).toEqual(['p-a']);
      expect((await pools.list()).map((p) => p.metadata.name)).toEqual(['p-a']);
    });

    it('a reconcile creates labelled members with credentials, drains them, and finalises the pool', async () => {
      const { pools, proxies } = await open();
      await pools.apply(poolRequest('p-c', 2), T, T);
      const create = [{ spec: poolRequest('p-c').spec.template.spec, labels: { team: 'crawl' } }];
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
      expect(await pools.apply(poolRequest('p-c'), T + 5, T)).toBe('stale');
    });

    it("reads a pool's Ready members now, at most as many as asked (discovery's fresh=true)", async () => {
      const { pools, proxies } = await open();
      for (const name of ['p-r', 'p-o']) await pools.apply(poolRequest(name, 3), T, T);
      const spec = poolRequest('p-r').spec.template.spec;
      const fill = async (name: string, n: number) =>
        (
          await pools.reconcile(
            name,
            () => T,
            () => ({
              writes: { create: Array.from({ length: n }, () => ({ spec, labels: {} })), drain: [] },
              result: 0,
            }),
          )
        ).created;
      const [a, b, c] = await fill('p-r', 3);
      const [other] = await fill('p-o', 1);
      for (const name of [a, b, other])
        await proxies.writeStatus(name ?? '', 1, { ...initialStatus(), phase: 'Ready' }, T);
      await proxies.writeStatus(c ?? '', 1, { ...initialStatus(), phase: 'Provisioning' }, T);
      const ready = await proxies.readyInPool('p-r', 10);
      expect(ready.map((s) => s.doc.metadata.name).sort()).toEqual([a, b].sort());
      expect(ready.every((s) => s.readAt.length > 0)).toBe(true);
      expect(await proxies.readyInPool('p-r', 1)).toHaveLength(1);
      expect(await proxies.readyInPool('p-none', 10)).toEqual([]);
    });

    it('two reconciles decided on one read do not both commit: the second decides again', async () => {
      const { pools } = await open();
      await pools.apply(poolRequest('p-d'), T, T);
      const one = { spec: poolRequest('p-d').spec.template.spec, labels: {} };
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
      await pools.apply(poolRequest('p-t', 2), T, T);
      const one = { spec: poolRequest('p-t').spec.template.spec, labels: {} };
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
}
