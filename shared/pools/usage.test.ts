/**
 * pool cost: folding the gateways' usage into status.usage: each count once, instance-hours and
 * egress priced, 24 hours kept; the hours follow the Ready members and the demand.
 */
import { describe, expect, it } from 'vitest';
import type { StoredDemand } from '../store/demand-rules.js';
import { foldUsage, MAX_GATEWAYS_COUNTED, trackLevels, type FoldInput } from './usage.js';

const HOUR = 3_600_000;
const T = Date.UTC(2026, 11, 7, 10); // a whole hour
const GIB = 2 ** 30;

const doc = (gateway: string, requests: number, bytes: number, over: Partial<StoredDemand> = {}): StoredDemand => ({
  pool: 'crawl',
  gateway,
  sequence: 1,
  inFlight: 0,
  startedPerSecond: 0,
  waiting: 0,
  held: [],
  at: T,
  expiresAtMs: T + 15_000,
  first: T,
  series: [{ since: 1, requests, succeeded: requests, bytesIn: bytes, bytesOut: 0 }],
  ...over,
});

const input = (over: Partial<FoldInput>): FoldInput => ({
  previous: undefined,
  docs: [],
  perHourUsd: 0,
  egressPerGibUsd: 0,
  now: T,
  everyMs: 60_000,
  ...over,
});

describe('pool cost: folding usage', () => {
  it('counts each document once however often it is folded, and a stale read adds nothing', () => {
    const first = foldUsage(input({ docs: [doc('gw-a', 10, GIB), doc('gw-b', 5, 0)] }));
    expect(first.counted).toBe(true);
    expect(first.usage?.total).toMatchObject({ requests: 15, bytesIn: GIB, since: T });
    // The same documents a minute later: nothing more.
    const again = foldUsage(
      input({ previous: first.usage, docs: [doc('gw-a', 10, GIB), doc('gw-b', 5, 0)], now: T + 60_000 }),
    );
    expect(again.counted).toBe(false);
    expect(again.usage?.total.requests).toBe(15);
    // gw-a grew to 12; gw-b read before the last fold (fewer counts): it subtracts nothing, its mark stays.
    const more = foldUsage(
      input({ previous: again.usage, docs: [doc('gw-a', 12, GIB), doc('gw-b', 3, 0)], now: T + 120_000 }),
    );
    expect(more.usage?.total.requests).toBe(17);
    expect(more.usage?.folded['gw-b']).toMatchObject({ requests: 5 });
  });

  it('counts a document made again after its deletion from zero, and forgets marks of documents gone', () => {
    const first = foldUsage(input({ docs: [doc('gw-a', 10, 0)] }));
    const remade = foldUsage(
      input({ previous: first.usage, docs: [doc('gw-a', 3, 0, { first: T + 50_000 })], now: T + 60_000 }),
    );
    expect(remade.usage?.total.requests).toBe(13);
    const gone = foldUsage(input({ previous: remade.usage, docs: [doc('gw-b', 1, 0)], now: T + 120_000 }));
    expect(Object.keys(gone.usage?.folded ?? {})).toEqual(['gw-b']);
  });

  it('folds at most once an interval: counts waiting say when the fold is due', () => {
    const first = foldUsage(input({ docs: [doc('gw-a', 10, 0)] }));
    const early = foldUsage(input({ previous: first.usage, docs: [doc('gw-a', 11, 0)], now: T + 20_000 }));
    expect(early).toEqual({ usage: first.usage, counted: false, dueInMs: 40_000 });
    expect(foldUsage(input({ previous: first.usage, docs: [doc('gw-a', 10, 0)], now: T + 20_000 }))).toEqual({
      usage: first.usage,
      counted: false,
    });
    expect(foldUsage(input({ docs: [] }))).toEqual({ usage: undefined, counted: false });
    // No new counts: the instance-hours alone are folded once an hour.
    const idle = input({ previous: first.usage, docs: [doc('gw-a', 10, 0)], perHourUsd: 1 });
    expect(foldUsage({ ...idle, now: T + HOUR - 1 })).toEqual({ usage: first.usage, counted: false });
    expect(foldUsage({ ...idle, now: T + HOUR }).usage?.total).toMatchObject({ requests: 10, instanceUsd: 1 });
  });

  it('prices instance-hours over the whole hours they span, egress per GiB, and keeps 24 hours', () => {
    const first = foldUsage(
      input({ docs: [doc('gw-a', 0, 0, { series: [] }), doc('gw-b', 1000, 2 * GIB)], egressPerGibUsd: 0.12 }),
    );
    expect(first.usage?.hours).toEqual([
      { hour: T, requests: 1000, succeeded: 1000, bytesIn: 2 * GIB, bytesOut: 0, instanceUsd: 0, egressUsd: 0.24 },
    ]);
    // 90 minutes later at $0.50 an hour: $0.50 in the first hour, $0.25 in the next.
    const later = foldUsage(
      input({ previous: first.usage, docs: [doc('gw-b', 1000, 2 * GIB)], perHourUsd: 0.5, now: T + 90 * 60_000 }),
    );
    expect(later.usage?.hours.map((h) => [h.hour, h.instanceUsd])).toEqual([
      [T, 0.5],
      [T + HOUR, 0.25],
    ]);
    const last24h = later.usage?.last24h;
    expect(last24h).toMatchObject({ requests: 1000, instanceUsd: 0.75, egressUsd: 0.24 });
    // $0.99 over 2 GiB and over 1,000 answered requests.
    expect(last24h?.perGibUsd).toBeCloseTo(0.495, 12);
    expect(last24h?.perThousandSucceededUsd).toBeCloseTo(0.99, 12);
    // A day and more on: the old hours leave the window, the total keeps them.
    const dayOn = foldUsage(
      input({ previous: later.usage, docs: [doc('gw-b', 1001, 2 * GIB)], perHourUsd: 0.5, now: T + 26 * HOUR }),
    );
    expect(dayOn.usage?.hours.length).toBe(24);
    expect(dayOn.usage?.hours[0]?.hour).toBe(T + 3 * HOUR);
    // The window: the current hour (just begun) and the 23 before it.
    expect(dayOn.usage?.last24h).toMatchObject({ requests: 1, instanceUsd: 11.5, egressUsd: 0 });
    expect(dayOn.usage?.last24h.perGibUsd).toBeUndefined();
    expect(dayOn.usage?.last24h.perThousandSucceededUsd).toBeCloseTo(11_500, 9);
    // The total keeps every hour: 24.5 more at $0.50.
    expect(dayOn.usage?.total).toMatchObject({ requests: 1001, egressUsd: 0.24 });
    expect(dayOn.usage?.total.instanceUsd).toBeCloseTo(0.75 + 12.25, 12);
  });

  it('counts at most MAX_GATEWAYS_COUNTED documents: a marked one always, the newest others while there is room', () => {
    const many = Array.from({ length: MAX_GATEWAYS_COUNTED + 10 }, (_, i) => doc(`gw-${i}`, 1, 0, { at: T + i }));
    const first = foldUsage(input({ docs: many }));
    expect(Object.keys(first.usage?.folded ?? {})).toHaveLength(MAX_GATEWAYS_COUNTED);
    expect(first.usage?.folded['gw-0']).toBeUndefined();
    expect(first.usage?.total.requests).toBe(MAX_GATEWAYS_COUNTED);
    // A newer gateway appears: the marked ones keep their marks (and their counts are not counted again).
    const later = foldUsage(
      input({ previous: first.usage, docs: [...many, doc('gw-new', 5, 0, { at: T + 99_999 })], now: T + 60_000 }),
    );
    expect(later.usage?.folded['gw-new']).toBeUndefined();
    expect(later.usage?.total.requests).toBe(MAX_GATEWAYS_COUNTED);
    // Documents deleted (TTL) free marks: a waiting one still there is counted then, once (gw-0…9, deleted
    // before they had room, never were).
    const freed = foldUsage(
      input({ previous: later.usage, docs: [...many.slice(20), doc('gw-new', 5, 0)], now: T + 120_000 }),
    );
    expect(freed.usage?.folded['gw-new']).toBeDefined();
    expect(freed.usage?.total.requests).toBe(MAX_GATEWAYS_COUNTED + 5);
  });
});

describe('pool cost: the hours follow the members and the demand', () => {
  const MIN = 60_000;
  const used = () => foldUsage(input({ docs: [doc('gw-a', 10, 0)] })).usage;

  it('gives each hour the peak and the time-weighted mean of what was held in it', () => {
    // 3 members for 30 min, then 1 for 30 min: mean 2, peak 3; demand 6 then 0.
    let usage = trackLevels(used(), { members: 3, demand: 6 }, T, MIN);
    usage = trackLevels(usage, { members: 1, demand: 0 }, T + 30 * MIN, MIN);
    usage = trackLevels(usage, { members: 1, demand: 0 }, T + HOUR, MIN);
    expect(usage?.hours[0]).toMatchObject({
      hour: T,
      requests: 10,
      members: { peak: 3, mean: 2, seconds: 3600 },
      demand: { peak: 6, mean: 3, seconds: 3600 },
    });
    // The new hour has begun with 1 member held, seen at its first instant.
    expect(usage?.hours[1]).toMatchObject({
      hour: T + HOUR,
      requests: 0,
      members: { peak: 1, mean: 0, seconds: 0 },
    });
    expect(usage?.levels).toEqual({ members: 1, demand: 0, at: T + HOUR });
  });

  it('changes nothing while the levels stay within the hour (no write), and nothing without usage', () => {
    const usage = trackLevels(used(), { members: 2, demand: 1 }, T, MIN);
    expect(trackLevels(usage, { members: 2, demand: 1 }, T + 59 * MIN, MIN)).toBe(usage);
    expect(trackLevels(undefined, { members: 2, demand: 1 }, T, MIN)).toBeUndefined();
  });

  it('follows a change at most once an interval: sooner, the last levels count as held until then', () => {
    const usage = trackLevels(used(), { members: 2, demand: 1 }, T, MIN);
    expect(trackLevels(usage, { members: 2, demand: 7 }, T + 30_000, MIN)).toBe(usage);
    const later = trackLevels(usage, { members: 2, demand: 7 }, T + 2 * MIN, MIN);
    expect(later?.hours[0]?.demand).toEqual({ peak: 7, mean: 1, seconds: 120 });
  });

  it('splits a level held across hours over each of them, and keeps 24 hours', () => {
    const start = trackLevels(used(), { members: 4, demand: 0 }, T + 45 * MIN, MIN);
    // Held 4 for 75 min: 15 min of the first hour, the whole second, then 2 from the third on.
    const later = trackLevels(start, { members: 2, demand: 0 }, T + 2 * HOUR, MIN);
    expect(later?.hours.map((h) => [h.hour, h.members])).toEqual([
      [T, { peak: 4, mean: 4, seconds: 900 }],
      [T + HOUR, { peak: 4, mean: 4, seconds: 3600 }],
      [T + 2 * HOUR, { peak: 2, mean: 0, seconds: 0 }],
    ]);
    const dayOn = trackLevels(later, { members: 0, demand: 0 }, T + 30 * HOUR, MIN);
    expect(dayOn?.hours).toHaveLength(24);
    expect(dayOn?.hours[0]).toMatchObject({ hour: T + 7 * HOUR, members: { peak: 2, mean: 2, seconds: 3600 } });
    // The hours left the window: the last 24 h no longer count the first one's requests.
    expect(dayOn?.last24h.requests).toBe(0);
  });

  it('a fold keeps the levels of the hours it adds to', () => {
    const followed = trackLevels(used(), { members: 2, demand: 3 }, T, MIN);
    const folded = foldUsage(input({ previous: followed, docs: [doc('gw-a', 15, 0)], now: T + 10 * MIN }));
    expect(folded.usage?.hours[0]).toMatchObject({ requests: 15, members: { peak: 2 }, demand: { peak: 3 } });
    expect(folded.usage?.levels).toEqual({ members: 2, demand: 3, at: T });
  });
});
