/** Discovery under a gateway's per-domain lists: one store listing per cache window, however many domains ask. */
import { describe, expect, it } from 'vitest';
import { startMemoryFleet } from '../../test/support/memory-fleet.js';
import { DISCOVERY_CACHE_MS, DiscoveryCache, FRESH_CACHE_MS } from './discovery-cache.js';
import { handleApi } from './handler.js';
import { initialStatus, type ProxyDoc } from '../domain/status.js';
import type { ProxyPage, StoredProxy } from '../store/ports.js';

const TOKEN = 'discover-token-0123456789';

describe('discovery cache', () => {
  it('fifty per-domain discoveries within the window read the page once; the next window reads again', async () => {
    const fleet = await startMemoryFleet({ apiTokens: [`discover:${TOKEN}`] });
    let listings = 0;
    const proxies = Object.assign(Object.create(fleet.proxies) as typeof fleet.proxies, {
      page: (after: string | null, limit: number) => (listings++, fleet.proxies.page(after, limit)),
    });
    let now = 1_000_000;
    const deps = { ...fleet, proxies, now: () => now, discoveryCache: new DiscoveryCache() };
    const discover = (domain: string) =>
      handleApi(deps, {
        method: 'GET',
        path: '/v1/discovery',
        query: new URLSearchParams({ for: domain }),
        headers: { authorization: `Bearer ${TOKEN}` },
        body: undefined,
      });
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => discover(`d${i}.example`)));
    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(listings).toBe(1);
    now += DISCOVERY_CACHE_MS;
    expect((await discover('late.example')).status).toBe(200);
    expect(listings).toBe(2);
  });

  it("fresh=true reads only the pool's Ready members, once per 200 ms however many ask, and is refused without a pool", async () => {
    const fleet = await startMemoryFleet({ apiTokens: [`discover:${TOKEN}`] });
    const reads = { page: 0, ready: [] as [string, number][] };
    const proxies = Object.assign(Object.create(fleet.proxies) as typeof fleet.proxies, {
      page: (after: string | null, limit: number) => (reads.page++, fleet.proxies.page(after, limit)),
      readyInPool: (pool: string, limit: number) => (
        reads.ready.push([pool, limit]),
        fleet.proxies.readyInPool(pool, limit)
      ),
    });
    let now = 1_000_000;
    const deps = { ...fleet, proxies, now: () => now, discoveryCache: new DiscoveryCache() };
    const discover = (query: Record<string, string>) =>
      handleApi(deps, {
        method: 'GET',
        path: '/v1/discovery',
        query: new URLSearchParams(query),
        headers: { authorization: `Bearer ${TOKEN}` },
        body: undefined,
      });
    const looks = await Promise.all(Array.from({ length: 20 }, () => discover({ pool: 'sleepy', fresh: 'true' })));
    expect(looks.map((a) => a.status)).toEqual(Array.from({ length: 20 }, () => 200));
    expect(reads).toEqual({ page: 0, ready: [['sleepy', 10]] });
    now += FRESH_CACHE_MS;
    await discover({ pool: 'sleepy', fresh: 'true', limit: '3' });
    expect(reads.ready).toEqual([
      ['sleepy', 10],
      ['sleepy', 3],
    ]);
    const refused = await Promise.all([
      discover({ fresh: 'true' }),
      discover({ pool: 'sleepy', fresh: 'true', limit: '11' }),
      discover({ pool: 'sleepy', fresh: 'true', cursor: 'x' }),
      discover({ pool: 'sleepy', fresh: 'yes' }),
    ]);
    expect(refused.map((a) => [a.status, (a.body as { error: { field?: string } }).error.field])).toEqual([
      [400, 'fresh'],
      [400, 'limit'],
      [400, 'cursor'],
      [400, 'fresh'],
    ]);
  });

  it('a fresh read that finds a member the kept page does not show Ready retires the page', async () => {
    const member = (phase: 'Provisioning' | 'Ready'): StoredProxy => {
      const doc: ProxyDoc = {
        apiVersion: 'egress.dev/v1',
        kind: 'Proxy',
        metadata: { name: 'sleepy-abcde', labels: { 'egress.dev/pool': 'sleepy' } },
        spec: { provider: 'local', placement: {}, port: 0 },
        generation: 1,
        requestTime: 0,
        createdAt: new Date(0).toISOString(),
        status: { ...initialStatus(), phase },
      };
      return { doc, readAt: '1970-01-01T00:00:00.000000000Z' };
    };
    let phase: 'Provisioning' | 'Ready' = 'Provisioning';
    let pages = 0;
    const store = {
      page: (): Promise<ProxyPage> => (pages++, Promise.resolve({ items: [member(phase)], next: null, readTime: 0 })),
      readyInPool: (): Promise<StoredProxy[]> => Promise.resolve(phase === 'Ready' ? [member(phase)] : []),
    };
    const cache = new DiscoveryCache();
    await cache.page(store, null, 500, 0);
    expect(await cache.readyInPool(store, 'sleepy', 10, 10)).toEqual([]);
    await cache.page(store, null, 500, 20);
    expect(pages).toBe(1);
    phase = 'Ready';
    expect(await cache.readyInPool(store, 'sleepy', 10, 300)).toHaveLength(1);
    const page = await cache.page(store, null, 500, 310);
    expect(pages).toBe(2);
    expect(page.items[0]?.doc.status.phase).toBe('Ready');
    // Now that the page shows it Ready, another fresh read keeps the page.
    await cache.readyInPool(store, 'sleepy', 10, 600);
    await cache.page(store, null, 500, 610);
    expect(pages).toBe(2);
    // Looks at many pools (any name a caller sends) never push the page out.
    for (let i = 0; i < 300; i++) await cache.readyInPool(store, `pool${i}`, 10, 620);
    await cache.page(store, null, 500, 630);
    expect(pages).toBe(2);
  });
});
