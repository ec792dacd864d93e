/**
 * Whether the gateway's RSS stayed flat over a soak (its target: "RSS flat over a 10-minute run").
 * The first quarter of the samples is warm-up (heap and socket pools growing to their working
 * size) and is left out; the rest is flat when both hold:
 * - the end (mean of the last 3 samples) is at most {@link FLAT_BOUND} above the start (mean of
 *   the first 3 samples after warm-up), and
 * - the least-squares line through the samples after warm-up rises by at most that bound over
 *   their span: no upward trend hidden by a dip at the end.
 */

/** Largest growth still called flat: 10 % of the RSS after warm-up. */
export const FLAT_BOUND = 0.1;
/** Fewer samples than this after warm-up cannot show a trend. */
export const MIN_SAMPLES = 8;

export interface SoakVerdict {
  /** Mean RSS (MB) of the first 3 samples after warm-up. */
  startMb: number;
  /** Mean RSS (MB) of the last 3 samples. */
  endMb: number;
  /** endMb ÷ startMb − 1. */
  growth: number;
  /** The fitted line's rise over the samples after warm-up, ÷ startMb. */
  trend: number;
  samples: number;
  flat: boolean;
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** Slope (per sample) of the least-squares line through `ys` at x = 0, 1, 2, … */
function slope(ys: readonly number[]): number {
  const mx = (ys.length - 1) / 2;
  const my = mean(ys);
  let num = 0;
  let den = 0;
  ys.forEach((y, x) => {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  });
  return den === 0 ? 0 : num / den;
}

/** @param rssMb - RSS samples at equal intervals over the whole soak, warm-up included */
export function soakVerdict(rssMb: readonly number[]): SoakVerdict {
  const after = rssMb.slice(Math.floor(rssMb.length / 4));
  if (after.length < MIN_SAMPLES) {
    return {
      startMb: Number.NaN,
      endMb: Number.NaN,
      growth: Number.NaN,
      trend: Number.NaN,
      samples: after.length,
      flat: false,
    };
  }
  const startMb = mean(after.slice(0, 3));
  const endMb = mean(after.slice(-3));
  const growth = endMb / startMb - 1;
  const trend = (slope(after) * (after.length - 1)) / startMb;
  return { startMb, endMb, growth, trend, samples: after.length, flat: growth <= FLAT_BOUND && trend <= FLAT_BOUND };
}
