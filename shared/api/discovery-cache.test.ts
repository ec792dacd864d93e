/** Discovery under a gateway's per-domain lists: one store listing per cache window, however many domains ask. */
import { describe, expect, it } from 'vitest';
import { startMemoryFleet } from '../../test/support/memory-fleet.js';
import { DISCOVERY_CACHE_MS, DiscoveryCache } from './discovery-cache.js';
import { handleApi } from './handler.js';

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
});
