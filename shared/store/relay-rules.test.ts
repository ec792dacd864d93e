/** The relay document's record of recent changes: what it keeps, for how long, and when it is full. */
import { describe, expect, it } from 'vitest';
import { changedSince, recordChanges } from './relay-rules.js';
import type { RelayDoc } from './records.js';

const T = Date.UTC(2026, 11, 1);
const HOUR = 3_600_000;
const doc = (changes: string): RelayDoc => ({
  bootId: 'b',
  seq: 1,
  sentAt: T,
  startedAt: T,
  heartbeatAt: T,
  providers: [],
  changes,
});

describe('recordChanges', () => {
  it('counts every item as changed when nothing was recorded before', () => {
    const changed = changedSince(doc(recordChanges(undefined, new Set(['a']), T, HOUR)));
    expect(changed('b', T)).toBe(true);
    expect(changed('b', T + 1)).toBe(false);
    expect(changed('a', T)).toBe(true);
  });

  it('keeps a change a heartbeat and five minutes, then forgets it', () => {
    const first = recordChanges(JSON.stringify({}), new Set(['a']), T, HOUR);
    const kept = recordChanges(first, new Set(), T + HOUR + 300_000, HOUR);
    expect(changedSince(doc(kept))('a', T)).toBe(true);
    const dropped = recordChanges(kept, new Set(), T + HOUR + 300_001, HOUR);
    expect(JSON.parse(dropped)).toEqual({});
  });

  it('past 2,000 entries folds the oldest into `*`, so newer changes stay exact', () => {
    const names = Array.from({ length: 2100 }, (_, i) => `i-${i}`);
    // One change a second, i-0 the oldest; the last report adds i-2099.
    const before = JSON.stringify(Object.fromEntries(names.slice(0, -1).map((name, i) => [name, T + i * 1000])));
    const json = recordChanges(before, new Set(['i-2099']), T + 2_099_000, HOUR);
    const record = JSON.parse(json) as Record<string, number>;
    expect(Object.keys(record)).toHaveLength(2000);
    const changed = changedSince(doc(json));
    // i-100 was folded (and everything before it): asked about earlier times, anything may have changed.
    expect(record['*']).toBe(T + 100_000);
    expect(changed('i-5000', T + 100_000)).toBe(true);
    expect(changed('i-5000', T + 100_001)).toBe(false);
    // The newest changes are still known one by one.
    expect(changed('i-2099', T + 2_000_000)).toBe(true);
    expect(changed('i-2098', T + 2_098_001)).toBe(false);
  });
});
