/** Per-domain learning: decayed counts, the cool-down rule, Thompson draws, bounded memory. */
import { describe, expect, it } from 'vitest';
import { betaSample, DEFAULT_LEARNING, Learning } from './learning.js';

/** A deterministic random source in [0, 1) (a linear congruential generator). */
function seeded(seed = 1): () => number {
  let s = seed;
  return () => {
    s = (s * 1664525 + 1013904223) % 4294967296;
    return s / 4294967296;
  };
}

const names = (...n: string[]) => n.map((name) => ({ name }));

describe('gateway learning', () => {
  it('Beta draws have the mean of the distribution', () => {
    const random = seeded(7);
    for (const [a, b] of [
      [1, 1],
      [9, 1],
      [1, 9],
      [30, 10],
    ] as const) {
      let sum = 0;
      for (let i = 0; i < 4000; i++) sum += betaSample(a, b, random);
      expect(sum / 4000).toBeCloseTo(a / (a + b), 1);
    }
  });

  it('a pair that keeps failing cools down after the third failure while it has no successes to speak of', () => {
    const learning = new Learning(DEFAULT_LEARNING, () => 0);
    expect(learning.record('p1', 'shop.example', false)).toBe(false);
    expect(learning.record('p1', 'shop.example', false)).toBe(false);
    expect(learning.record('p1', 'shop.example', false)).toBe(true);
    // Another domain, and a pair with a success record, do not.
    expect(learning.record('p1', 'other.example', false)).toBe(false);
    for (let i = 0; i < 5; i++) learning.record('p2', 'shop.example', true);
    for (let i = 0; i < 3; i++) expect(learning.record('p2', 'shop.example', false)).toBe(false);
  });

  it('counts halve every half-life, so an old verdict fades', () => {
    let now = 0;
    const learning = new Learning(DEFAULT_LEARNING, () => now);
    for (let i = 0; i < 8; i++) learning.record('p1', 'd', false);
    now += DEFAULT_LEARNING.halfLifeMs;
    expect(learning.score('p1', 'd')?.failures).toBeCloseTo(4);
    now += 2 * DEFAULT_LEARNING.halfLifeMs;
    expect(learning.score('p1', 'd')?.failures).toBeCloseTo(1);
  });

  it('draws the proxies that succeed for the domain, and a recovered one comes back', () => {
    let now = 0;
    const learning = new Learning(DEFAULT_LEARNING, () => now, seeded(3));
    for (let i = 0; i < 20; i++) {
      learning.record('good', 'd', true);
      learning.record('banned', 'd', false);
    }
    const draws = (n: number) => {
      let banned = 0;
      for (let i = 0; i < n; i++) if (learning.choose(names('good', 'banned'), 'd')?.name === 'banned') banned++;
      return banned;
    };
    expect(draws(1000)).toBeLessThan(5);
    // Hours later both verdicts have faded: the banned proxy is drawn again, and its successes count.
    now += 8 * DEFAULT_LEARNING.halfLifeMs;
    expect(draws(1000)).toBeGreaterThan(100);
    for (let i = 0; i < 20; i++) learning.record('banned', 'd', true);
    expect(draws(1000)).toBeGreaterThan(300);
  });

  it('remembers at most maxDomains domains, least recently used out first', () => {
    const learning = new Learning({ ...DEFAULT_LEARNING, maxDomains: 2 }, () => 0);
    learning.record('p', 'a', true);
    learning.record('p', 'b', true);
    learning.record('p', 'a', true);
    learning.record('p', 'c', true);
    expect(learning.domainCount()).toBe(2);
    expect(learning.score('p', 'b')).toBeUndefined();
    expect(learning.score('p', 'a')?.successes).toBe(2);
    learning.forget('p');
    expect(learning.score('p', 'a')).toBeUndefined();
  });

  it('choose over nothing is undefined', () => {
    expect(new Learning(DEFAULT_LEARNING, () => 0).choose([], 'd')).toBeUndefined();
  });
});
