/** FleetRouter's tries: how many proxies one request may go through, and what a refusal costs. */
import { describe, expect, it } from 'vitest';
import { FleetRouter } from './router.js';
import { createMemoryFleet, upstreamNamed } from './testing.js';

async function routerOver(names: string[]) {
  const router = new FleetRouter({ fleet: createMemoryFleet(names.map(upstreamNamed)).api });
  await router.refresh(true);
  return router;
}

const refused = { ok: false as const, reason: 'ECONNREFUSED', penalize: true, retry: true, refused: true };
const reset = { ok: false as const, reason: 'ECONNRESET', penalize: true, retry: true };

describe('router tries', () => {
  it('refused connections (proxies already gone) do not use up the three tries', async () => {
    const router = await routerOver(['a', 'b', 'c', 'd', 'e', 'f']);
    const tried: string[] = [];
    // a, b, c and d were deleted a moment ago: the list still has them.
    const routed = await router.route({ session: undefined, domain: 'x' }, (u) => {
      tried.push(u.name);
      return Promise.resolve(['a', 'b', 'c', 'd'].includes(u.name) ? refused : { ok: true as const, value: u.name });
    });
    expect(routed).toMatchObject({ ok: true, value: 'e' });
    expect(tried).toEqual(['a', 'b', 'c', 'd', 'e']);
    // Each refusal skipped its proxy at once: the next request goes straight to a live one.
    const next = await router.route({ session: undefined, domain: 'x' }, (u) =>
      Promise.resolve({ ok: true as const, value: u.name }),
    );
    expect(['e', 'f']).toContain(next.ok && next.value);
  });

  it('other failures end the request after three tries', async () => {
    const router = await routerOver(['a', 'b', 'c', 'd']);
    const tried: string[] = [];
    const routed = await router.route({ session: undefined, domain: 'x' }, (u) => {
      tried.push(u.name);
      return Promise.resolve(reset);
    });
    expect(routed.ok).toBe(false);
    expect(tried).toHaveLength(3);
  });

  it('a stale address asks for the list again at once, at most once a second', async () => {
    let now = 1_000_000;
    const fleet = createMemoryFleet(['a', 'b', 'c'].map(upstreamNamed));
    const router = new FleetRouter({ fleet: fleet.api, now: () => now });
    await router.refresh(true);
    const listed = () => fleet.discoveries.filter((d) => d.forDomain === undefined).length;
    const before = listed();
    const attempt = (u: { name: string }) =>
      Promise.resolve(u.name === 'a' ? refused : { ok: true as const, value: u.name });
    // The session pins the first pick to `a`, whose address is stale.
    await router.route({ session: 's1', domain: 'x' }, attempt);
    expect(listed()).toBe(before + 1);
    now += 500;
    await router.route({ session: undefined, domain: 'x' }, () => Promise.resolve(refused));
    expect(listed()).toBe(before + 1);
    now += 600;
    await router.route({ session: undefined, domain: 'x' }, () => Promise.resolve(refused));
    expect(listed()).toBe(before + 2);
  });

  it('refusals are bounded too: at most eight, then each counts as a try', async () => {
    const names = Array.from({ length: 20 }, (_, i) => `p-${String(i).padStart(2, '0')}`);
    const router = await routerOver(names);
    let calls = 0;
    const routed = await router.route({ session: undefined, domain: 'x' }, () => (calls++, Promise.resolve(refused)));
    expect(routed.ok).toBe(false);
    expect(calls).toBe(8 + 3);
  });

  it('gateway learning: a proxy that keeps failing for one domain is left out there and reported with the target', async () => {
    const fleet = createMemoryFleet(['a'].map(upstreamNamed));
    const router = new FleetRouter({ fleet: fleet.api, selection: { failuresToSkip: 10 } });
    await router.refresh(true);
    for (let i = 0; i < 3; i++)
      await router.route({ session: undefined, domain: 'shop.example' }, () => Promise.resolve(reset));
    expect(fleet.reports).toEqual([
      { name: 'a', report: expect.objectContaining({ reason: 'blocked', target: 'shop.example' }) as unknown },
    ]);
    const ok = () => Promise.resolve({ ok: true as const, value: 'page' });
    expect(await router.route({ session: undefined, domain: 'shop.example' }, ok)).toMatchObject({
      ok: false,
      reasons: ['no Ready fleet proxy matches'],
    });
    expect(await router.route({ session: undefined, domain: 'news.example' }, ok)).toMatchObject({ ok: true });
  });
});
