import { describe, expect, it } from 'vitest';
import { DEFAULT_LEARNING, Learning } from './learning.js';
import { DEFAULT_SELECTION, Selector } from './selection.js';
import { upstreamNamed } from './testing.js';

const up = upstreamNamed;

function selector(names: string[], overrides: Partial<typeof DEFAULT_SELECTION> = {}) {
  let now = 1_000_000;
  const s = new Selector({ ...DEFAULT_SELECTION, ...overrides, now: () => now });
  s.setUpstreams(names.map(up));
  return { s, advance: (ms: number) => (now += ms) };
}
const picks = (s: Selector, n: number, req = {}) => Array.from({ length: n }, () => s.pick(req)?.name);

describe('selection', () => {
  it('rotates over the Ready proxies in name order, one per pick', () => {
    const { s } = selector(['c', 'a', 'b']);
    expect(picks(s, 5)).toEqual(['a', 'b', 'c', 'a', 'b']);
  });

  it('returns nothing when no proxy is Ready, or all were tried', () => {
    expect(selector([]).s.pick({})).toBeUndefined();
    expect(selector(['a']).s.pick({ exclude: new Set(['a']) })).toBeUndefined();
  });

  it('keeps a session on its proxy while it stays Ready, and moves it once when it is not', () => {
    const { s } = selector(['a', 'b', 'c']);
    s.pick({});
    expect(picks(s, 4, { session: 'x' })).toEqual(['b', 'b', 'b', 'b']);
    expect(s.pick({ session: 'y' })?.name).toBe('c');
    s.setUpstreams(['a', 'c'].map(up));
    const moved = s.pick({ session: 'x' })?.name;
    expect(moved).toBeDefined();
    expect(moved).not.toBe('b');
    expect(picks(s, 3, { session: 'x' })).toEqual([moved, moved, moved]);
    s.setUpstreams(['a', 'b', 'c'].map(up));
    expect(s.pick({ session: 'x' })?.name).toBe(moved);
  });

  it('moves a session whose proxy failed this request to the retry proxy, and keeps it there', () => {
    const { s } = selector(['a', 'b']);
    expect(s.pick({ session: 'x' })?.name).toBe('a');
    expect(s.pick({ session: 'x', exclude: new Set(['a']) })?.name).toBe('b');
    expect(s.pick({ session: 'x' })?.name).toBe('b');
  });

  it('forgets idle sessions and keeps at most maxSessions', () => {
    const { s, advance } = selector(['a', 'b', 'c'], { sessionIdleMs: 1000, maxSessions: 2 });
    s.pick({ session: 's1' });
    s.pick({ session: 's2' });
    s.pick({ session: 's3' });
    expect(s.sessionCount()).toBe(2);
    expect(s.sessionProxy('s1')).toBeUndefined();
    advance(1001);
    s.sweep();
    expect(s.sessionCount()).toBe(0);
  });

  it('skips a proxy after consecutive failures for a while, and says so once', () => {
    const { s, advance } = selector(['a', 'b'], { failuresToSkip: 2, skipMs: 5000 });
    expect(s.recordFailure('a')).toBe(false);
    expect(s.recordFailure('a')).toBe(true);
    expect(s.recordFailure('a')).toBe(false);
    expect(picks(s, 3)).toEqual(['b', 'b', 'b']);
    advance(5001);
    expect(picks(s, 2)).toEqual(['a', 'b']);
  });

  it('a refused connection skips the proxy at once; listed at a new address it is usable again', () => {
    const { s } = selector(['a', 'b'], { failuresToSkip: 3, skipMs: 30_000 });
    expect(s.recordFailure('a', true)).toBe(true);
    expect(picks(s, 2)).toEqual(['b', 'b']);
    // The same list again: still skipped. Replaced under its name at another port: forgotten.
    s.setUpstreams(['a', 'b'].map(up));
    expect(s.skipped('a')).toBe(true);
    s.setUpstreams([{ ...up('a'), port: 2 }, up('b')]);
    expect(s.skipped('a')).toBe(false);
  });

  it('a success clears the failure count', () => {
    const { s } = selector(['a'], { failuresToSkip: 2 });
    s.recordFailure('a');
    s.recordSuccess('a');
    expect(s.recordFailure('a')).toBe(false);
  });

  it('uses skipped proxies when nothing else is left', () => {
    const { s } = selector(['a'], { failuresToSkip: 1 });
    s.recordFailure('a');
    expect(s.pick({})?.name).toBe('a');
  });

  it('leaves a proxy banned by a domain out for that domain only, until the ban expires', () => {
    const { s, advance } = selector(['a', 'b'], { banMs: 1000 });
    s.recordBan('a', 'shop.example');
    expect(picks(s, 3, { domain: 'shop.example' })).toEqual(['b', 'b', 'b']);
    expect(picks(s, 2, { domain: 'other.example' }).sort()).toEqual(['a', 'b']);
    advance(1001);
    expect(picks(s, 2, { domain: 'shop.example' }).sort()).toEqual(['a', 'b']);
  });

  it('applies the per-domain list from discovery (?for=)', () => {
    const { s } = selector(['a', 'b', 'c']);
    s.setAllowedForDomain('d.example', new Set(['c']));
    expect(picks(s, 2, { domain: 'd.example' })).toEqual(['c', 'c']);
    s.setAllowedForDomain('d.example', undefined);
    expect(picks(s, 3, { domain: 'd.example' }).sort()).toEqual(['a', 'b', 'c']);
  });

  it('a proxy that joins the fleet after a domain list was loaded is usable for that domain', () => {
    const { s } = selector(['a', 'b', 'c']);
    s.setAllowedForDomain('d.example', new Set(['a', 'b']));
    // Churn: a and b are deleted, d and e are new; the domain's list is not loaded again yet.
    s.setUpstreams(['c', 'd', 'e'].map(up));
    expect(picks(s, 4, { domain: 'd.example' }).sort()).toEqual(['d', 'd', 'e', 'e']);
  });

  it('gateway grammar: a strict session (oneip-true) picks nothing rather than move; sesstime is its own idle time', () => {
    const { s, advance } = selector(['a', 'b']);
    expect(s.pick({ session: 'x', strict: true })?.name).toBe('a');
    expect(s.pick({ session: 'x', strict: true, exclude: new Set(['a']) })).toBeUndefined();
    s.setUpstreams([up('b')]);
    expect(s.pick({ session: 'x', strict: true })).toBeUndefined();
    // Without strict the same session moves.
    expect(s.pick({ session: 'x' })?.name).toBe('b');
    s.setUpstreams(['a', 'b'].map(up));
    expect(s.pick({ session: 'short', sessionIdleMs: 60_000 })?.name).toBe('a');
    advance(60_001);
    s.sweep();
    expect(s.sessionProxy('short')).toBeUndefined();
    expect(s.sessionProxy('x')).toBe('b');
  });
});

describe('gateway learning: selection', () => {
  function learner(names: string[]) {
    let now = 1_000_000;
    const clock = () => now;
    let seed = 11;
    const random = () => (seed = (seed * 1664525 + 1013904223) % 4294967296) / 4294967296;
    const s = new Selector({ ...DEFAULT_SELECTION, now: clock }, new Learning(DEFAULT_LEARNING, clock, random));
    s.setUpstreams(names.map(up));
    return { s, advance: (ms: number) => (now += ms) };
  }

  it('tries every proxy once per domain in rotation, then draws the ones that succeed there', () => {
    const { s } = learner(['a', 'b', 'c']);
    expect(picks(s, 3, { domain: 'shop' })).toEqual(['a', 'b', 'c']);
    for (let i = 0; i < 10; i++) {
      s.recordSuccess('a', 'shop');
      s.recordSuccess('b', 'shop');
      s.recordBan('c', 'shop');
    }
    const drawn = picks(s, 200, { domain: 'shop' });
    expect(drawn).not.toContain('c');
    expect(new Set(drawn)).toEqual(new Set(['a', 'b']));
    // Another domain knows nothing of shop's verdicts: each proxy once, in rotation.
    expect(picks(s, 3, { domain: 'news' }).sort()).toEqual(['a', 'b', 'c']);
  });

  it('rotates among proxies that all do well for the domain, as round-robin would', () => {
    const { s } = learner(['a', 'b', 'c']);
    for (const name of ['a', 'b', 'c']) for (let i = 0; i < 200; i++) s.recordSuccess(name, 'shop');
    const drawn = picks(s, 30, { domain: 'shop' });
    expect(drawn.filter((n, i) => n === drawn[i + 3] || i + 3 >= drawn.length)).toHaveLength(30);
  });

  it('resets and timeouts for one domain cool the pair down there once they keep failing, unless the proxy fails everywhere', () => {
    const { s, advance } = learner(['a', 'b']);
    expect(s.recordDomainFailure('a', 'shop')).toBe(false);
    expect(s.recordDomainFailure('a', 'shop')).toBe(false);
    expect(s.recordDomainFailure('a', 'shop')).toBe(true);
    expect(picks(s, 4, { domain: 'shop' })).toEqual(['b', 'b', 'b', 'b']);
    expect(s.pick({ domain: 'shop', exclude: new Set(['b']) })).toBeUndefined();
    advance(DEFAULT_SELECTION.banMs + 1);
    expect(s.pick({ domain: 'shop', exclude: new Set(['b']) })?.name).toBe('a');
    // A proxy in the penalty box is failing for everyone: not a verdict about this domain.
    for (let i = 0; i < DEFAULT_SELECTION.failuresToSkip; i++) s.recordFailure('b');
    for (let i = 0; i < 3; i++) expect(s.recordDomainFailure('b', 'news')).toBe(false);
  });
});
