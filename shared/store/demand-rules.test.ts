/** autoscale: the demand documents' rules: newest sequence wins, expiry, the kick, the sum. */
import { describe, expect, it } from 'vitest';
import { demandReportSchema } from '../domain/autoscale.js';
import { demandStep, sumDemand, type StoredDemand } from './demand-rules.js';

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
  at: T,
  expiresAtMs: T + 15_000,
  ...over,
});

describe('autoscale: demand reports', () => {
  it('a report not newer than the stored one changes nothing (duplicate or late)', () => {
    expect(demandStep(stored(5), 'crawl', report(5), T).write).toBeUndefined();
    expect(demandStep(stored(5), 'crawl', report(4), T).outcome).toEqual({ applied: false, kick: false });
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
