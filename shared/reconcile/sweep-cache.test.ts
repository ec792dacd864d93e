import { describe, expect, it } from 'vitest';
import { initialStatus } from '../domain/status.js';
import { createLogger } from '../logger.js';
import { ManualClock } from '../store/clock.js';
import { MemoryProxyRepository } from '../store/memory/proxies.js';
import { MemoryState } from '../store/memory/state.js';
import type { ProxyPage } from '../store/ports.js';
import { SweepCache } from './sweep-cache.js';

const T = Date.UTC(2026, 5, 1);
const request = (name: string) => ({
  apiVersion: 'egress.dev/v1' as const,
  kind: 'Proxy' as const,
  action: 'apply' as const,
  metadata: { name, labels: {} },
  spec: { provider: 'local', placement: {}, port: 0 },
});

/** The memory store, counting whole-page reads. */
class CountingProxies extends MemoryProxyRepository {
  pageReads = 0;
  override page(after: string | null, limit: number): Promise<ProxyPage> {
    this.pageReads++;
    return super.page(after, limit);
  }
}

async function fleet(names: string[]) {
  const clock = new ManualClock(T);
  const proxies = new CountingProxies(clock, new MemoryState(clock));
  for (const n of names) await proxies.apply(request(n), T, T);
  clock.advance(60_000);
  return { clock, proxies, cache: new SweepCache(clock, 3_600_000, 10) };
}
const namesOf = (page: { items: { doc: { metadata: { name: string } } }[] }) =>
  page.items.map((i) => i.doc.metadata.name);

describe('SweepCache', () => {
  it('reads a page whole once, then only what changed; a changed document comes with its new readAt', async () => {
    const { clock, proxies, cache } = await fleet(['a-1', 'a-2', 'a-3']);
    expect((await cache.page(proxies, null, 2)).source).toBe('fill');
    const warm = await cache.page(proxies, null, 2);
    expect(warm).toMatchObject({ source: 'changes', next: 'a-2' });
    expect(namesOf(warm)).toEqual(['a-1', 'a-2']);
    clock.advance(60_000);
    await proxies.writeStatus('a-2', 1, { ...initialStatus(), phase: 'Provisioning' }, T);
    const changed = await cache.page(proxies, null, 2);
    const a2 = changed.items.find((i) => i.doc.metadata.name === 'a-2');
    expect(a2?.doc.status.phase).toBe('Provisioning');
    expect(a2?.readAt).toBe((await proxies.get('a-2'))?.readAt);
    // A fence on the cached copy holds: the lease is taken on its readAt.
    expect(await proxies.acquireLease('a-2', 'w', 1, 30_000, () => T, a2?.readAt ?? '')).toBeDefined();
    expect(proxies.pageReads).toBe(1);
  });

  it('a cached copy older than the stored document is refused by the fence until the change is merged', async () => {
    const { clock, proxies, cache } = await fleet(['f-1']);
    await cache.page(proxies, null, 2);
    clock.advance(1000);
    const stale = (await cache.page(proxies, null, 2)).items[0];
    await proxies.writeStatus('f-1', 1, { ...initialStatus(), phase: 'Provisioning' }, T);
    expect(await proxies.acquireLease('f-1', 'w', 1, 30_000, () => T, stale?.readAt ?? '')).toBeUndefined();
    const merged = (await cache.page(proxies, null, 2)).items[0];
    expect(await proxies.acquireLease('f-1', 'w', 1, 30_000, () => T, merged?.readAt ?? '')).toBeDefined();
  });

  it('a finalised proxy drops out (the range count tells, the page is read whole)', async () => {
    const { clock, proxies, cache } = await fleet(['d-1', 'd-2']);
    await proxies.requestDelete('d-1', T + 1, T);
    clock.advance(60_000);
    await cache.page(proxies, null, 5);
    await proxies.finalise('d-1', 2);
    clock.advance(60_000);
    const page = await cache.page(proxies, null, 5);
    expect(namesOf(page)).toEqual(['d-2']);
    expect(page.source).toBe('fill');
  });

  it('a proxy created in the range joins; past the batch size the page is read whole and its end moves', async () => {
    const { clock, proxies, cache } = await fleet(['n-1', 'n-3', 'n-5']);
    await cache.page(proxies, null, 2);
    await cache.page(proxies, 'n-3', 2);
    clock.advance(60_000);
    await proxies.apply(request('n-4'), T + 1, T);
    clock.advance(60_000);
    const last = await cache.page(proxies, 'n-3', 2);
    expect(last).toMatchObject({ source: 'changes', next: null });
    expect(namesOf(last)).toEqual(['n-4', 'n-5']);
    await proxies.apply(request('n-2'), T + 1, T);
    clock.advance(60_000);
    const first = await cache.page(proxies, null, 2);
    expect(first).toMatchObject({ source: 'fill', next: 'n-2' });
    expect(namesOf(first)).toEqual(['n-1', 'n-2']);
    // The chain goes on from the new end: n-3 is not skipped.
    expect(namesOf(await cache.page(proxies, 'n-2', 2))).toEqual(['n-3', 'n-4']);
  });

  it('a page older than the maximum age is read whole; the oldest pages go past the size bound', async () => {
    const { clock, proxies, cache } = await fleet(
      Array.from({ length: 12 }, (_, i) => `m-${String(i).padStart(2, '0')}`),
    );
    await cache.page(proxies, null, 5);
    clock.advance(3_600_000);
    expect((await cache.page(proxies, null, 5)).source).toBe('fill');
    await cache.page(proxies, 'm-04', 5);
    expect(cache.size()).toBe(10);
    await cache.page(proxies, 'm-09', 5);
    expect(cache.size()).toBeLessThanOrEqual(10);
    expect((await cache.page(proxies, null, 5)).source).toBe('fill');
  });

  it('what a reconcile does to the documents it is given never reaches the cache', async () => {
    const { proxies, cache } = await fleet(['c-1']);
    const first = await cache.page(proxies, null, 2);
    if (first.items[0]) first.items[0].doc.status.phase = 'Failed';
    const again = await cache.page(proxies, null, 2);
    expect(again.items[0]?.doc.status.phase).toBe('Pending');
  });

  it('a changes query that fails reads the page whole and says so; the sweep goes on', async () => {
    const { proxies, cache } = await fleet(['a-1', 'a-2']);
    await cache.page(proxies, null, 2);
    proxies.changes = () => Promise.reject(new Error('FAILED_PRECONDITION: the query requires an index'));
    const warnings: unknown[] = [];
    const logger = createLogger({ write: (line) => void warnings.push(JSON.parse(line)) });
    const page = await cache.page(proxies, null, 2, logger);
    expect(page.source).toBe('fill');
    expect(namesOf(page)).toEqual(['a-1', 'a-2']);
    expect(warnings).toContainEqual(
      expect.objectContaining({ message: 'changes query failed; reading the sweep page whole' }),
    );
  });
});
