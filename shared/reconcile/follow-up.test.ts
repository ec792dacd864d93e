import { describe, expect, it } from 'vitest';
import type { Bus } from '../bus/pubsub.js';
import { FollowUpLedger, MAX_FOLLOW_UP_MS, MAX_HOLD_MS, holdUntilDue, publishFollowUps } from './follow-up.js';

function recording() {
  const sent: { topic: string; data: unknown }[] = [];
  const bus: Bus = {
    publish: (topic, data) => {
      sent.push({ topic, data });
      return Promise.resolve(String(sent.length));
    },
  };
  return { bus, sent };
}

describe('follow-ups', () => {
  it('groups by kind and whole second of delay; leaves what is further than the window to the sweep', async () => {
    const { bus, sent } = recording();
    const n = await publishFollowUps(
      bus,
      [
        { kind: 'names', name: 'a', afterMs: 2000 },
        { kind: 'names', name: 'b', afterMs: 1500 },
        { kind: 'names', name: 'a', afterMs: 2000 },
        { kind: 'names', name: 'c', afterMs: 25_000 },
        { kind: 'pools', name: 'p', afterMs: 2000 },
        { kind: 'names', name: 'd', afterMs: MAX_FOLLOW_UP_MS + 1 },
      ],
      1_000_000,
      { verifyEgress: true },
    );
    expect(n).toBe(3);
    expect(sent.map((s) => s.data)).toEqual([
      { names: ['a', 'b'], dueAt: 1_002_000, verifyEgress: true },
      { names: ['c'], dueAt: 1_025_000, verifyEgress: true },
      { pools: ['p'], dueAt: 1_002_000 },
    ]);
    expect(new Set(sent.map((s) => s.topic))).toEqual(new Set(['proxy-checks']));
  });

  it('splits a group into messages of at most 100 names', async () => {
    const { bus, sent } = recording();
    const rechecks = Array.from({ length: 250 }, (_, i) => ({ kind: 'names' as const, name: `p-${i}`, afterMs: 2000 }));
    expect(await publishFollowUps(bus, rechecks, 0)).toBe(3);
    expect(sent.map((s) => (s.data as { names: string[] }).names.length)).toEqual([100, 100, 50]);
  });

  it('holds until due, never when late or skewed, never longer than the hold', async () => {
    const waits: number[] = [];
    const wait = (ms: number) => Promise.resolve(void waits.push(ms));
    expect(await holdUntilDue(undefined, 10, wait)).toBe(true);
    expect(await holdUntilDue(5, 10, wait)).toBe(true);
    expect(await holdUntilDue(10 + MAX_HOLD_MS, 10, wait)).toBe(true);
    expect(await holdUntilDue(10 + MAX_HOLD_MS + 1, 10, wait)).toBe(false);
    expect(await holdUntilDue(10 + MAX_FOLLOW_UP_MS, 10, wait)).toBe(false);
    expect(await holdUntilDue(10 + MAX_FOLLOW_UP_MS + 1, 10, wait)).toBe(true);
    expect(waits).toEqual([MAX_HOLD_MS, MAX_HOLD_MS, MAX_HOLD_MS]);
  });

  it('with a ledger, leaves a name to the follow-up already on its way when that one is due no later', async () => {
    const { bus, sent } = recording();
    const ledger = new FollowUpLedger();
    const again = (now: number, afterMs: number, name = 'a', options = {}) =>
      publishFollowUps(bus, [{ kind: 'names', name, afterMs }], now, options, ledger);
    expect(await again(1000, 2000)).toBe(1); // a due at 3000
    expect(await again(1500, 2000)).toBe(0); // wants 4000: the one due at 3000 looks first
    expect(await again(1500, 1000)).toBe(1); // wants 2500, sooner: published (a due at 2500)
    expect(await again(1500, 2000, 'b')).toBe(1); // another name
    expect(await again(1500, 2000, 'a', { verifyEgress: true })).toBe(1); // a look of another kind
    // The follow-up itself, handled when due, asks for the next one: nothing of a's is pending after now.
    expect(await again(2500, 2000)).toBe(1);
    expect(await again(2600, 2000)).toBe(0);
    expect(sent.map((s) => s.data)).toEqual([
      { names: ['a'], dueAt: 3000 },
      { names: ['a'], dueAt: 2500 },
      { names: ['b'], dueAt: 3500 },
      { names: ['a'], dueAt: 3500, verifyEgress: true },
      { names: ['a'], dueAt: 4500 },
    ]);
  });

  it('a full ledger drops what is already due first, then the oldest', () => {
    const ledger = new FollowUpLedger(2);
    ledger.record('a', 100, 0);
    ledger.record('b', 200, 0);
    ledger.record('c', 300, 150); // a is due: dropped
    expect([ledger.covers('a', 1000, 0), ledger.covers('b', 1000, 0), ledger.covers('c', 1000, 0)]).toEqual([
      false,
      true,
      true,
    ]);
    ledger.record('d', 400, 150); // none due: the oldest (b) goes
    expect([ledger.covers('b', 1000, 0), ledger.covers('c', 1000, 0), ledger.covers('d', 1000, 0)]).toEqual([
      false,
      true,
      true,
    ]);
  });
});
