/** wake: a request for a sleeping pool is held, the demand reported at once, and served by the first Ready member (or 503 after --wake-timeout). */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DemandReport } from '../shared/domain/autoscale.js';
import { DemandReporter } from './demand.js';
import { ApiError } from '../shared/api/api-error.js';
import type { FleetApi } from './fleet-api.js';
import type { Upstream } from './selection.js';
import { startGateway, type Gateway } from './server.js';
import { curl, startTestProxy, startTestTarget, type TestProxy, type TestTarget } from './testing.js';

let proxy: TestProxy;
let target: TestTarget;
let gw: Gateway | undefined;

/** A fleet twin with pools: `autoscaled` pools wake `wakeMs` after a report with waiting requests. */
function poolFleet(pools: Record<string, { autoscaled: boolean; wakeMs: number }>) {
  const lists = new Map<string, Upstream[]>();
  const reports: { pool: string; report: DemandReport }[] = [];
  const api: FleetApi = {
    discover: (filters) => Promise.resolve(filters.pool ? (lists.get(filters.pool) ?? []) : []),
    report: () => Promise.resolve(),
    demand(pool, report) {
      reports.push({ pool, report });
      const p = pools[pool];
      if (!p) return Promise.reject(new ApiError('NotFound', `pool "${pool}" not found`));
      if (p.autoscaled && report.waiting > 0) setTimeout(() => lists.set(pool, [proxy.upstream]), p.wakeMs).unref();
      return Promise.resolve({ autoscaled: p.autoscaled });
    },
  };
  return { api, reports };
}

beforeAll(async () => {
  proxy = await startTestProxy('sleepy-aaaaa');
  target = await startTestTarget();
});
afterAll(async () => {
  await Promise.all([proxy.close(), target.close()]);
});
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

const through = (user: string, extra: string[] = []) =>
  curl(['-sS', '-D', '-', '-x', gw!.url.replace(`${gw!.credentials.username}:`, `${user}:`), ...extra, target.url]);

describe('wake: a request for a pool at zero', () => {
  it('is held, reported at once with waiting 1, and served by the first member that becomes Ready', async () => {
    const fleet = poolFleet({ sleepy: { autoscaled: true, wakeMs: 1500 } });
    gw = await startGateway({ fleet: fleet.api, listen: { host: '127.0.0.1', port: 0 }, refreshMs: 100_000 });
    const started = Date.now();
    const answer = await through(`${gw.credentials.username}-pool-sleepy`);
    expect(answer.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1400);
    expect(fleet.reports[0]).toMatchObject({ pool: 'sleepy', report: { waiting: 1 } });
  });

  it('looks at its pool read fresh, not at the cached page, and is served within a look of the member becoming Ready', async () => {
    // The API answers an ordinary discovery from a page read up to 2 s before; `fresh` reads now.
    const lists = new Map<string, { at: number; list: Upstream[] }>();
    const looks: boolean[] = [];
    let readyAt = 0;
    const api: FleetApi = {
      discover: (filters, forDomain) => {
        if (filters.pool === 'sleepy' && forDomain === undefined) looks.push(filters.fresh === true);
        const listed = lists.get(filters.pool ?? '');
        const seen = listed && (filters.fresh || Date.now() - listed.at >= 2000) ? listed.list : [];
        return Promise.resolve(seen);
      },
      report: () => Promise.resolve(),
      demand: () => {
        setTimeout(() => {
          readyAt = Date.now();
          lists.set('sleepy', { at: readyAt, list: [proxy.upstream] });
        }, 1000).unref();
        return Promise.resolve({ autoscaled: true });
      },
    };
    gw = await startGateway({ fleet: api, listen: { host: '127.0.0.1', port: 0 }, refreshMs: 100_000 });
    const answer = await through(`${gw.credentials.username}-pool-sleepy`);
    const answeredAt = Date.now();
    expect(answer.status).toBe(200);
    expect(answeredAt - readyAt).toBeLessThan(1000);
    // The scope's first discovery is the ordinary one; every look while held is fresh (the
    // per-domain list of the target, loaded once served, is not a look).
    expect(looks[0]).toBe(false);
    expect(looks.slice(1).every(Boolean)).toBe(true);
    // The target's list, read from the shared page that does not show the member yet, does not
    // leave it out for the target: the next requests are served too, not answered 502.
    await new Promise((r) => setTimeout(r, 100));
    const next = await Promise.all([1, 2, 3].map(() => through(`${gw!.credentials.username}-pool-sleepy`)));
    expect(next.map((a) => a.status)).toEqual([200, 200, 200]);
  });

  it('answers 503 with Retry-After when no member is Ready within --wake-timeout', async () => {
    const fleet = poolFleet({ sleepy: { autoscaled: true, wakeMs: 60_000 } });
    gw = await startGateway({
      fleet: fleet.api,
      listen: { host: '127.0.0.1', port: 0 },
      refreshMs: 100_000,
      wakeTimeoutMs: 1200,
    });
    const answer = await through(`${gw.credentials.username}-pool-sleepy`);
    expect(answer.status).toBe(503);
    expect(answer.body).toMatch(/retry-after: 1\r?\n/i);
    expect(answer.body).toMatch(/pool "sleepy" is waking: no member became Ready within 1s/);
  });

  it('refuses at once (407 naming the key) a pool that does not exist or is not autoscaled', async () => {
    const fleet = poolFleet({ fixed: { autoscaled: false, wakeMs: 0 } });
    gw = await startGateway({ fleet: fleet.api, listen: { host: '127.0.0.1', port: 0 }, refreshMs: 100_000 });
    const missing = await through(`${gw.credentials.username}-pool-nothing`);
    expect(missing.status).toBe(407);
    expect(missing.body).toMatch(/username key "pool": no pool "nothing"/);
    const fixed = await through(`${gw.credentials.username}-pool-fixed`);
    expect(fixed.status).toBe(407);
    expect(fixed.body).toMatch(/no Ready fleet proxy has pool fixed/);
  });
});

describe('autoscale: the gateway demand reporter', () => {
  it('reports only pools with demand, once more when it ends, with increasing sequences', async () => {
    const sent: { pool: string; report: DemandReport }[] = [];
    let now = 1_000_000;
    const reporter = new DemandReporter(
      {
        demand: (pool, report) => {
          sent.push({ pool, report });
          return Promise.resolve({ autoscaled: true });
        },
      },
      { intervalMs: 5000, now: () => now },
    );
    const end = reporter.begin('crawl');
    reporter.begin('crawl')(false);
    reporter.holdSessions('crawl', () => ['crawl-aaaaa']);
    now += 5000;
    await reporter.flush();
    expect(sent).toEqual([
      {
        pool: 'crawl',
        report: expect.objectContaining({
          inFlight: 1,
          startedPerSecond: 0.4,
          waiting: 0,
          held: ['crawl-aaaaa'],
          intervalSeconds: 5,
        }) as DemandReport,
      },
    ]);
    end(true);
    now += 5000;
    await reporter.flush();
    now += 5000;
    await reporter.flush();
    expect(sent.map((s) => s.report.inFlight)).toEqual([1, 0]);
    const sequences = sent.map((s) => s.report.sequence);
    expect(sequences[1]).toBeGreaterThan(sequences[0]!);
  });
});

describe('wake: a burst of requests at a sleeping pool', () => {
  it('costs one report at once, not one each; the next interval reports them all', async () => {
    const sent: DemandReport[] = [];
    let now = 1_000_000;
    const reporter = new DemandReporter(
      {
        demand: (_pool, report) => {
          sent.push(report);
          return Promise.resolve({ autoscaled: true });
        },
      },
      { intervalMs: 5000, now: () => now },
    );
    const waits = await Promise.all(Array.from({ length: 10 }, () => reporter.wait('sleepy')));
    expect(waits.every((w) => w.answer.autoscaled)).toBe(true);
    expect(sent.map((r) => r.waiting)).toEqual([1]);
    now += 5000;
    await reporter.flush();
    expect(sent.map((r) => r.waiting)).toEqual([1, 10]);
    // A wait after the interval is reported at once again.
    await reporter.wait('sleepy');
    expect(sent.map((r) => r.waiting)).toEqual([1, 10, 11]);
    for (const w of waits) w.done();
  });
});

describe('pool cost: the gateway usage counters', () => {
  it('reports counters with the demand: a failed report loses nothing, a new series starts after a day unacknowledged', async () => {
    const sent: DemandReport[] = [];
    let fail = false;
    let now = 1_000_000;
    const reporter = new DemandReporter(
      {
        demand: (_pool, report) => {
          if (fail) return Promise.reject(new Error('API unreachable'));
          sent.push(report);
          return Promise.resolve({ autoscaled: false });
        },
      },
      { intervalMs: 5000, now: () => now },
    );
    reporter.begin('crawl')(true);
    reporter.bytes('crawl', 1000, 100);
    reporter.begin('crawl')(false);
    now += 5000;
    await reporter.flush();
    const first = sent[0]?.usage;
    expect(first).toMatchObject({ requests: 2, succeeded: 1, bytesIn: 1000, bytesOut: 100 });
    reporter.begin('crawl')(true);
    now += 5000;
    await reporter.flush();
    // Bytes of a body that ended after its request, lost on the way: the next report carries them
    // (nothing else would make it report: no demand is left).
    fail = true;
    reporter.bytes('crawl', 500, 50);
    now += 5000;
    await reporter.flush();
    fail = false;
    now += 5000;
    await reporter.flush();
    expect(sent.at(-1)?.usage).toEqual({
      since: first?.since,
      requests: 3,
      succeeded: 2,
      bytesIn: 1500,
      bytesOut: 150,
    });
    // Bytes that come after the request ended (a body still streaming) are reported, then the pool rests.
    reporter.bytes('crawl', 10, 0);
    now += 5000;
    await reporter.flush();
    expect(sent.at(-1)?.usage?.bytesIn).toBe(1510);
    const count = sent.length;
    now += 5000;
    await reporter.flush();
    expect(sent.length).toBe(count);
    // A day without a report the API took: counting begins again, under a new series.
    fail = true;
    reporter.begin('crawl')(true);
    now += 5000;
    await reporter.flush();
    now += 86_400_000;
    fail = false;
    reporter.begin('crawl')(true);
    await reporter.flush();
    const last = sent.at(-1)?.usage;
    expect(last).toMatchObject({ requests: 1, succeeded: 1, bytesIn: 0 });
    expect(last?.since).toBeGreaterThan(first?.since ?? Infinity);
  });
});
