/** FleetRouter's tries: how many proxies one request may go through, and what a refusal costs. */
import { describe, expect, it } from 'vitest';
import type { DemandReport } from '../shared/domain/autoscale.js';
import { createLogger } from '../shared/logger.js';
import { DemandReporter } from './demand.js';
import { FleetRouter, type Attempt } from './router.js';
import { createMemoryFleetApi, upstreamNamed } from './testing.js';

async function routerOver(names: string[]) {
  const router = new FleetRouter({ fleet: createMemoryFleetApi(names.map(upstreamNamed)).api });
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

  it('a slow request is logged with each attempt: its proxy, its outcome and its time', async () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ write: (line) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
    const router = new FleetRouter({
      fleet: createMemoryFleetApi(['a', 'b'].map(upstreamNamed)).api,
      logger,
      slowRouteMs: 50,
    });
    await router.refresh(true);
    const slowly = (value: Attempt<string>) => new Promise<Attempt<string>>((r) => setTimeout(() => r(value), 30));
    // Both fast: nothing logged.
    await router.route({ session: 's', domain: 'x' }, () => Promise.resolve({ ok: true as const, value: 'fast' }));
    expect(lines.filter((l) => l['message'] === 'slow request through the fleet')).toEqual([]);
    let calls = 0;
    const routed = await router.route({ session: undefined, domain: 'x' }, (u) =>
      slowly(calls++ === 0 ? reset : { ok: true as const, value: u.name }),
    );
    expect(routed.ok).toBe(true);
    const slow = lines.find((l) => l['message'] === 'slow request through the fleet');
    expect(slow).toMatchObject({ severity: 'WARNING', domain: 'x' });
    expect(slow?.['ms']).toBeGreaterThanOrEqual(50);
    const attempts = slow?.['attempts'] as string[];
    const first = routed.ok && routed.value === 'a' ? 'b' : 'a';
    expect(attempts.map((a) => a.replace(/\d+ ms/, 'N ms'))).toEqual([
      `${first}: ECONNRESET (N ms)`,
      `${first === 'a' ? 'b' : 'a'}: ok (N ms)`,
    ]);
    // An outage makes every request slow: at most one line a second, the others counted in the next.
    for (let i = 0; i < 3; i++) await router.route({ session: undefined, domain: 'x' }, () => slowly(reset));
    const slowLines = () => lines.filter((l) => l['message'] === 'slow request through the fleet');
    expect(slowLines()).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 1000));
    await router.route({ session: undefined, domain: 'x' }, () => slowly(reset));
    expect(slowLines()).toHaveLength(2);
    expect(slowLines()[1]?.['moreSinceLast']).toBe(3);
  });

  it('a stale address asks for the list again at once, at most once a second', async () => {
    let now = 1_000_000;
    const fleet = createMemoryFleetApi(['a', 'b', 'c'].map(upstreamNamed));
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
    const fleet = createMemoryFleetApi(['a'].map(upstreamNamed));
    const router = new FleetRouter({ fleet: fleet.api, selection: { failuresToSkip: 10 } });
    await router.refresh(true);
    for (let i = 0; i < 3; i++)
      await router.route({ session: undefined, domain: 'shop.example' }, () => Promise.resolve(reset));
    // Reported once a discovery after the failures still lists it (router.ts: no report from a stale list).
    await router.refresh(true);
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

describe('router discovery', () => {
  const banned = { ok: false as const, reason: 'HTTP 403', penalize: false, retry: true, banned: { status: 403 } };

  it('runs one discovery at a time: ticks and refreshes meanwhile start none, then one follows', async () => {
    const fleet = createMemoryFleetApi(['a'].map(upstreamNamed));
    let release: () => void = () => undefined;
    const slow = {
      ...fleet.api,
      discover: async (...args: Parameters<typeof fleet.api.discover>) => {
        await new Promise<void>((resolve) => (release = resolve));
        return fleet.api.discover(...args);
      },
    };
    const router = new FleetRouter({ fleet: slow, refreshMs: 5 });
    const first = router.start();
    await new Promise((resolve) => setTimeout(resolve, 1));
    release();
    await first;
    // The timer ticks every 5 ms; the API now takes 100 ms to answer.
    const calls = () => fleet.discoveries.length;
    const before = calls();
    const explicit = [router.refresh(), router.refresh(), router.refresh()];
    await new Promise((resolve) => setTimeout(resolve, 100));
    release();
    await new Promise((resolve) => setTimeout(resolve, 1));
    release();
    await Promise.all(explicit);
    router.stop();
    // The tick's discovery (or the first refresh) and the one queued behind it; nothing concurrent.
    expect(calls() - before).toBeLessThanOrEqual(2);
  });

  it('does not report a proxy its latest discovery no longer lists as tried; reports one still listed', async () => {
    let now = 1_000_000;
    const fleet = createMemoryFleetApi(['a', 'b'].map(upstreamNamed));
    const router = new FleetRouter({ fleet: fleet.api, now: () => now });
    await router.refresh(true);
    const banA = (u: { name: string }) =>
      Promise.resolve(u.name === 'a' ? banned : { ok: true as const, value: u.name });
    await router.route({ session: 's-a', domain: 'x.example' }, banA);
    expect(fleet.reports).toEqual([]);
    // `a` was replaced meanwhile (a new instance: other credentials): the failure was the stale list's.
    fleet.set([{ ...upstreamNamed('a'), authorization: 'Basic bmV3Om5ldw==' }, upstreamNamed('b')]);
    now += 10;
    await router.refresh();
    expect(fleet.reports).toEqual([]);
    // Still listed as tried: reported, with when it was seen.
    fleet.set([upstreamNamed('b')]);
    await router.refresh();
    now += 40_000;
    await router.route({ session: 's-b', domain: 'y.example' }, (u) =>
      Promise.resolve(u.name === 'b' ? banned : { ok: true as const, value: u.name }),
    );
    now += 10;
    await router.refresh();
    expect(fleet.reports).toEqual([
      {
        name: 'b',
        report: expect.objectContaining({
          reason: 'banned',
          target: 'y.example',
          observedAt: new Date(now - 10).toISOString(),
        }) as unknown,
      },
    ]);
  });

  it('bounds the per-domain lists: each at most every 10 s, at most four at once', async () => {
    let now = 1_000_000;
    const fleet = createMemoryFleetApi(['a', 'b'].map(upstreamNamed));
    const router = new FleetRouter({ fleet: fleet.api, now: () => now });
    await router.refresh(true);
    const ok = (u: { name: string }) => Promise.resolve({ ok: true as const, value: u.name });
    for (let i = 0; i < 20; i++) await router.route({ session: undefined, domain: `d${i}.example` }, ok);
    const perDomain = () => fleet.discoveries.filter((d) => d.forDomain !== undefined).length;
    const first = perDomain();
    expect(first).toBe(20);
    for (let i = 0; i < 5; i++) {
      now += 1000;
      await router.refresh();
    }
    expect(perDomain()).toBe(first);
    now += 10_000;
    await router.refresh();
    expect(perDomain() - first).toBe(4);
  });
});

describe('pool cost: a router counts its pool’s usage for the demand report', () => {
  it('every request routed, those answered, and the bytes its recorder is told', async () => {
    const sent: DemandReport[] = [];
    let now = 1_000_000;
    const demand = new DemandReporter(
      { demand: (_pool, report) => Promise.resolve(void sent.push(report)).then(() => ({ autoscaled: false })) },
      { now: () => now },
    );
    const router = new FleetRouter({
      fleet: createMemoryFleetApi(['a', 'b', 'c', 'd'].map(upstreamNamed)).api,
      filters: { pool: 'crawl' },
      demand,
      now: () => now,
    });
    await router.refresh(true);
    const ok = await router.route({ session: undefined, domain: 'x' }, (u) =>
      Promise.resolve({ ok: true as const, value: u.name }),
    );
    if (ok.ok) router.metrics.bytes({ proxy: ok.upstream.name, domain: 'x', session: undefined }, 2048, 64);
    await router.route({ session: undefined, domain: 'x' }, () => Promise.resolve(reset));
    now += 5000;
    await demand.flush();
    expect(sent.at(-1)?.usage).toMatchObject({ requests: 2, succeeded: 1, bytesIn: 2048, bytesOut: 64 });
    router.stop();
  });
});
