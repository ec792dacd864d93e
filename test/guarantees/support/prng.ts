/** A tiny seeded PRNG (mulberry32) and the seed and scale knobs of the guarantee suites (`GUARANTEE_*`). */

/** A deterministic random source: the same seed gives the same sequence. */
export interface Rng {
  /** A float in [0, 1). */
  next(): number;
  /** An integer in [lo, hi], both inclusive. */
  int(lo: number, hi: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  pick<T>(items: readonly T[]): T;
  /** A new array with the items in random order. */
  shuffle<T>(items: readonly T[]): T[];
  /** An independent generator derived from this one's next value (per scenario, per message). */
  fork(): Rng;
}

/** mulberry32: 32 bits of state, good enough to drive test scenarios. */
export function mulberry32(seed: number): Rng {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const rng: Rng = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p) => next() < p,
    pick: <T>(items: readonly T[]): T => {
      const item = items[Math.floor(next() * items.length)];
      if (item === undefined) throw new Error('pick from an empty list');
      return item;
    },
    shuffle: <T>(items: readonly T[]): T[] => {
      const out = [...items];
      for (let i = out.length - 1; i > 0; i--) {
        const j = Math.floor(next() * (i + 1));
        [out[i], out[j]] = [out[j] as T, out[i] as T];
      }
      return out;
    },
    fork: () => mulberry32(Math.floor(next() * 4294967296)),
  };
  return rng;
}

/** True under `npm run soak`: suites run more scenarios with a random seed. */
export const SOAK = process.env['GUARANTEE_SOAK'] === '1';

/**
 * The seed of one suite: `GUARANTEE_SEED` when set (replaying a failure), else a fresh random seed under
 * `npm run soak`, else the suite's fixed seed, so `npm test` is repeatable.
 */
export function suiteSeed(fixed: number): number {
  const given = process.env['GUARANTEE_SEED'];
  if (given === undefined || given === '') return SOAK ? Math.floor(Math.random() * 2 ** 32) : fixed;
  const seed = Number(given);
  if (!Number.isInteger(seed) || seed < 0 || seed >= 2 ** 32)
    throw new Error(`GUARANTEE_SEED must be an integer from 0 to 2^32-1, not "${given}"`);
  return seed;
}

/** How many scenarios to run: `GUARANTEE_SCENARIOS` when set, else `soak` under `npm run soak`, else `fixed`. */
export function scenarioCount(fixed: number, soak: number): number {
  const given = Number(process.env['GUARANTEE_SCENARIOS'] ?? '');
  if (Number.isInteger(given) && given > 0) return given;
  return SOAK ? soak : fixed;
}

/** The command that replays a suite with the same seed and scale. */
export function replayHint(file: string, seed: number, scenarios?: number): string {
  const scale = scenarios === undefined ? '' : ` GUARANTEE_SCENARIOS=${scenarios}`;
  return `replay: GUARANTEE_SEED=${seed}${scale} npx vitest run --project integration ${file}`;
}
