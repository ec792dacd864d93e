/** The soak's "flat": end within 10 % of the start after warm-up, and no upward trend beyond it. */
import { describe, expect, it } from 'vitest';
import { soakVerdict } from './soak.js';

const steady = [60, 80, 95, 100, 101, 99, 100, 102, 100, 101, 99, 100, 101, 100, 102, 100];

describe('soakVerdict', () => {
  it('calls a steady RSS after warm-up flat, whatever the warm-up grew', () => {
    const v = soakVerdict(steady);
    expect(v.flat).toBe(true);
    expect(v.samples).toBe(12);
    expect(v.growth).toBeLessThan(0.02);
  });

  it('is not flat when the end is more than 10 % above the start', () => {
    const v = soakVerdict([...steady.slice(0, 13), 112, 113, 114]);
    expect(v.growth).toBeGreaterThan(0.1);
    expect(v.flat).toBe(false);
  });

  it('is not flat when RSS climbs steadily and only dips at the very end', () => {
    // Warm-up, then +1 MB a sample for 21 samples, then back near the start for the last 3.
    const climbing = [
      ...[70, 80, 90, 95, 98, 99, 100, 100],
      ...Array.from({ length: 21 }, (_, i) => 101 + i),
      104,
      104,
      104,
    ];
    const v = soakVerdict(climbing);
    expect(v.growth).toBeLessThanOrEqual(0.1);
    expect(v.trend).toBeGreaterThan(0.1);
    expect(v.flat).toBe(false);
  });

  it('is not flat with too few samples to show a trend', () =>
    expect(soakVerdict([100, 100, 100, 100]).flat).toBe(false));
});
