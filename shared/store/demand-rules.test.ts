/** autoscale: the demand documents' rules: newest sequence wins, expiry, the kick, the sum. */
import { describe, expect, it } from 'vitest';
import { demandReportSchema } from '../domain/autoscale.js';
import { demandStep, sumDemand, usageOfDoc, type StoredDemand } from './demand-rules.js';

const T = Date.UTC(2026, 11, 6);
const report = (sequence: number, over: Record<string, unknown> = {}) =>
  demandReportSchema.parse({ gateway: 'gw-a', sequence, inFlight: 2, startedPerSecond: 1, waiting: 0, ...over });
const stored = (sequence: number, over: Partial<StoredDemand> = {}): StoredDemand => ({
  pool: 'crawl',
  gateway: 'gw-a',
  sequence,
  inFlight: 2,
  startedPerSecond: 1,
  waiting: 0,
  held: [],
  series: [],
  at: T,
  expiresAtMs: T + 15_000,
  ...over,
});

describe('autoscale: demand reports', () => {
  it('a report not newer than the stored one changes nothing (duplicate or late)', () => {
    expect(demandStep(stored(5), 'crawl', report(5), T).write).toBeUndefined();
    expect(demandStep(stored(5), 'crawl', report(4), T).outcome).toEqual({ applied: false, kick: false, fold: false });
    expect(demandStep(stored(5), 'crawl', report(6), T).write).toMatchObject({ sequence: 6, expiresAtMs: T + 15_000 });
  });

  it('kicks the pool when demand appears or requests start waiting, not on every report', () => {
    expect(demandStep(undefined, 'crawl', report(1), T).outcome.kick).toBe(true);
    expect(demandStep(stored(1), 'crawl', report(2), T).outcome.kick).toBe(false);
    expect(demandStep(stored(1), 'crawl', report(2, { waiting: 1 }), T).outcome.kick).toBe(true);
    // An expired report is no demand: a gateway back from silence kicks again.
    expect(demandStep(stored(1), 'crawl', report(2), T + 20_000).outcome.kick).toBe(true);
    expect(demandStep(undefined, 'crawl', report(1, { inFlight: 0, startedPerSecond: 0 }), T).outcome.kick).toBe(false);
  });

  it('sums only live reports, and the members they hold', () => {
    const { demand, held } = sumDemand(
      [
        stored(1, { held: ['crawl-aaaaa'] }),
        stored(1, { gateway: 'gw-b', waiting: 3, held: ['crawl-bbbbb'] }),
        stored(1, { gateway: 'gw-c', inFlight: 50, expiresAtMs: T }),
      ],
      T,
    );
    expect(demand).toEqual({ inFlight: 4, startedPerSecond: 2, waiting: 3, gateways: 2 });
    expect([...held]).toEqual(['crawl-aaaaa', 'crawl-bbbbb']);
  });
});

describe('pool cost: usage counters in the demand documents', () => {
  const usage = (since: number, requests: number, bytesIn = requests * 100) => ({
    since,
    requests,
    succeeded: requests,
    bytesIn,
    bytesOut: requests,
  });
  /** Delivers `reports` in order to one document, as the store does. */
  const deliver = (reports: ReturnType<typeof report>[], start?: StoredDemand) => {
    let doc = start;
    for (const r of reports) doc = demandStep(doc, 'crawl', r, T).write ?? doc;
    return doc;
  };

  it('a duplicate changes nothing; a late report of the series adds only what it has beyond', () => {
    const doc = deliver([report(1, { usage: usage(1, 5) }), report(3, { usage: usage(1, 9) })]);
    expect(doc && usageOfDoc(doc)).toEqual({ requests: 9, succeeded: 9, bytesIn: 900, bytesOut: 9 });
    // The same report again: no write at all.
    expect(demandStep(doc, 'crawl', report(3, { usage: usage(1, 9) }), T).write).toBeUndefined();
    // Late (sequence 2, counters 7 < 9): its demand is stale and its counters are already held.
    expect(demandStep(doc, 'crawl', report(2, { usage: usage(1, 7) }), T).write).toBeUndefined();
    // Late but with bytes the newer one had not seen yet (counters only grow, per counter).
    const late = demandStep(doc, 'crawl', report(2, { usage: usage(1, 7, 1000) }), T);
    expect(late.outcome.applied).toBe(false);
    expect(late.write && usageOfDoc(late.write)).toEqual({ requests: 9, succeeded: 9, bytesIn: 1000, bytesOut: 9 });
    expect(late.write?.sequence).toBe(3);
  });

  it('a new series adds to the old; a late report of the old one still counts; the fifth pushes the oldest into carried', () => {
    let doc = deliver([report(1, { usage: usage(1, 5) }), report(10, { usage: usage(10, 2) })]);
    expect(doc && usageOfDoc(doc).requests).toBe(7);
    doc = deliver([report(4, { usage: usage(1, 6) })], doc);
    expect(doc && usageOfDoc(doc).requests).toBe(8);
    doc = deliver(
      [20, 30, 40].map((since) => report(since, { usage: usage(since, 1) })),
      doc,
    );
    expect(doc?.series.map((s) => s.since)).toEqual([10, 20, 30, 40]);
    expect(doc?.carried?.requests).toBe(6);
    expect(doc && usageOfDoc(doc).requests).toBe(11);
    // A report of a series older than every kept one, once four are kept, is dropped, never double counted.
    expect(demandStep(doc, 'crawl', report(5, { usage: usage(1, 50) }), T).write).toBeUndefined();
  });

  it("duplicated, late and shuffled deliveries count each gateway's final counters once", () => {
    let seed = 7;
    const random = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let round = 0; round < 50; round++) {
      const sent: ReturnType<typeof report>[] = [];
      let sequence = 0;
      let want = 0;
      for (let series = 0; series < 1 + Math.floor(random() * 4); series++) {
        const since = ++sequence;
        let requests = 0;
        for (let k = 0; k < 1 + Math.floor(random() * 5); k++) {
          requests += Math.floor(random() * 10);
          sent.push(report(++sequence, { usage: usage(since, requests) }));
        }
        want += requests;
      }
      const deliveries = sent.flatMap((r) => (random() < 0.4 ? [r, r] : [r])).sort(() => random() - 0.5);
      const doc = deliver(deliveries);
      expect(doc && usageOfDoc(doc).requests, `round ${round}`).toBe(want);
    }
  });

  it('asks for a fold when counts arrive where none were waiting, not for every report', () => {
    const first = demandStep(undefined, 'crawl', report(1, { usage: usage(1, 5) }), T);
    expect(first.outcome.fold).toBe(true);
    const doc = first.write;
    // Not folded yet: the fold is already asked for.
    expect(demandStep(doc, 'crawl', report(2, { usage: usage(1, 6) }), T).outcome.fold).toBe(false);
    // Folded up to the stored counts: new counts ask again.
    const mark = { first: doc?.first ?? 0, requests: 5, succeeded: 5, bytesIn: 500, bytesOut: 5 };
    expect(demandStep(doc, 'crawl', report(2, { usage: usage(1, 6) }), T, mark).outcome.fold).toBe(true);
    // No new counts: nothing to fold.
    expect(demandStep(doc, 'crawl', report(2, { usage: usage(1, 5) }), T, mark).outcome.fold).toBe(false);
  });
});
