/**
 * `ProxyRepository.changes` for every store (run inside `describe('store contract: <name>')`):
 * every write of a proxy document, whoever makes it, is seen by a changes query from a read made
 * before it; a finalised proxy leaves the range's count; a changed document's `readAt` is a fence.
 */
import { expect, it } from 'vitest';
import { initialStatus } from '../../shared/domain/status.js';
import type { PoolRepository, ProxyRepository, ReportRepository } from '../../shared/store/ports.js';
import { poolRequest, proxyRequest, REPORT_POLICY, T } from './store-contract-requests.js';

const names = (items: { doc: { metadata: { name: string } } }[]) => items.map((i) => i.doc.metadata.name).sort();
/** Far enough after every write of a test that nothing counts as changed since. */
const LATER_MS = 60_000;

async function readTimeNow(proxies: ProxyRepository): Promise<number> {
  return (await proxies.changes(null, null, 0)).readTime;
}

export function changesContract(
  open: () => Promise<{ proxies: ProxyRepository; pools: PoolRepository; reports: ReportRepository }>,
): void {
  it('changes: the proxies of a name range written since a read, with how many it holds', async () => {
    const { proxies } = await open();
    for (const n of ['c-1', 'c-2', 'c-3', 'c-4']) await proxies.apply(proxyRequest(n), T, T);
    const page = await proxies.page(null, 10);
    expect(names(page.items)).toEqual(['c-1', 'c-2', 'c-3', 'c-4']);
    expect(await proxies.changes(null, null, page.readTime + LATER_MS)).toMatchObject({ changed: [], count: 4 });
    expect(await proxies.changes('c-1', 'c-3', page.readTime + LATER_MS)).toMatchObject({ changed: [], count: 2 });
    await proxies.writeStatus('c-2', 1, { ...initialStatus(), phase: 'Provisioning' }, T);
    await proxies.requestDelete('c-3', T + 1, T);
    const lease = await proxies.acquireLease('c-4', 'w', 1, 30_000, () => T, (await proxies.get('c-4'))?.readAt ?? '');
    expect(lease).toBeDefined();
    const changes = await proxies.changes('c-1', 'c-3', page.readTime);
    expect(names(changes.changed)).toEqual(['c-2', 'c-3']);
    expect(changes.count).toBe(2);
    expect(changes.readTime).toBeGreaterThanOrEqual(page.readTime);
    // What a changes query returns is as good a basis as a get: its readAt fences.
    const c2 = changes.changed.find((i) => i.doc.metadata.name === 'c-2');
    expect(c2?.readAt).toBe((await proxies.get('c-2'))?.readAt);
    expect(c2?.doc.status.phase).toBe('Provisioning');
    expect(names((await proxies.changes('c-3', null, page.readTime)).changed)).toEqual(['c-4']);
    expect(await proxies.finalise('c-3', 2)).toBe(true);
    expect((await proxies.changes('c-1', null, page.readTime + LATER_MS)).count).toBe(2);
  });

  it('changes: writes by pools and traffic reports are seen too', async () => {
    const { proxies, pools, reports } = await open();
    await pools.apply(poolRequest('cp'), T, T);
    const before = await readTimeNow(proxies);
    const create = [{ spec: proxyRequest('x').spec, labels: {} }];
    const { created } = await pools.reconcile(
      'cp',
      () => T,
      () => ({ writes: { create, drain: [] }, result: 0 }),
    );
    const member = created[0] ?? '';
    expect(names((await proxies.changes(null, null, before)).changed)).toContain(member);
    const beforeDrain = await readTimeNow(proxies);
    await pools.reconcile(
      'cp',
      () => T + 1,
      () => ({ writes: { create: [], drain: [member] }, result: 0 }),
    );
    const drained = (await proxies.changes(null, null, beforeDrain)).changed.find(
      (i) => i.doc.metadata.name === member,
    );
    expect(drained?.doc.deletionRequestedAt).toBeDefined();
    await proxies.apply(proxyRequest('cr-1'), T, T);
    const beforeReport = await readTimeNow(proxies);
    const report = { reason: 'blocked' as const, target: 'example.com', requestId: 'q1' };
    await reports.record({ proxy: 'cr-1', caller: 'c'.repeat(64), report, now: T, policy: REPORT_POLICY });
    const reported = (await proxies.changes('cr', null, beforeReport)).changed.find(
      (i) => i.doc.metadata.name === 'cr-1',
    );
    expect(reported?.doc.status.reports).toMatchObject({ blocked: 1 });
  });
}
