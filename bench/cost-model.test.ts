/** The monthly bill from one cycle's counts: free quotas first, then list prices. */
import { describe, expect, it } from 'vitest';
import { monthlyCost } from './cost-model.js';
import { zeroCounts } from './counting.js';

describe('monthlyCost', () => {
  it('bills Firestore reads beyond the daily free quota at the list price', () => {
    // 1000 reads a minute: 43,200 cycles, 43.2 M reads, 1.5 M free → 417 × $0.06.
    const cost = monthlyCost({ ...zeroCounts(), reads: 1000 }, 60);
    expect(cost.cycles).toBe(43_200);
    expect(cost.firestore).toBeCloseTo(25.02, 6);
    expect(cost.total).toBeCloseTo(25.02, 6);
  });

  it('charges nothing while usage stays within the free tiers', () => {
    const cost = monthlyCost({ ...zeroCounts(), reads: 10, writes: 5, invocations: 20, pubsubBytes: 20_000 }, 60);
    expect(cost.total).toBe(0);
  });

  it('bills requests beyond 2 M and writes beyond the free quota', () => {
    // 100 invocations and 100 writes a minute: 4.32 M requests (2.32 M billed), 4.32 M writes (3.72 M billed).
    const cost = monthlyCost({ ...zeroCounts(), invocations: 100, writes: 100 }, 60);
    expect(cost.invocations).toBeCloseTo(0.928, 6);
    expect(cost.firestore).toBeCloseTo(6.696, 6);
  });
});
