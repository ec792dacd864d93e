import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { coalesce } from './loops.js';

describe('coalesce', () => {
  beforeEach(() => vi.useFakeTimers());
  afterEach(() => vi.useRealTimers());

  /** A run that takes `ms` and records when it started. */
  function recorder(ms: number) {
    const starts: number[] = [];
    const fn = async () => {
      starts.push(Date.now());
      await new Promise((resolve) => setTimeout(resolve, ms));
    };
    return { starts, fn };
  }

  it('shares one follow-up run among the calls made while a run is under way', async () => {
    const { starts, fn } = recorder(100);
    const run = coalesce(fn);
    const first = run();
    const followers = [run(), run(), run()];
    expect(followers[0]).toBe(followers[2]);
    await vi.advanceTimersByTimeAsync(250);
    await Promise.all([first, ...followers]);
    expect(starts.length).toBe(2);
  });

  it('starts runs at least the gap apart, sharing the delayed run among every call meanwhile', async () => {
    const { starts, fn } = recorder(10);
    const run = coalesce(fn, 1000);
    const t0 = Date.now();
    const first = run();
    await vi.advanceTimersByTimeAsync(50);
    // The first run ended 40 ms ago: these calls wait for the gap instead of starting at once.
    const waiting = [run(), run()];
    expect(waiting[0]).toBe(waiting[1]);
    await vi.advanceTimersByTimeAsync(900);
    expect(starts.length).toBe(1);
    await vi.advanceTimersByTimeAsync(100);
    await Promise.all([first, ...waiting]);
    expect(starts.map((t) => t - t0)).toEqual([0, 1000]);
    // Once the gap has passed, a call starts a run at once.
    await vi.advanceTimersByTimeAsync(2000);
    void run();
    expect(starts.length).toBe(3);
    await vi.advanceTimersByTimeAsync(10);
  });

  it('starts a failed run’s follow-up all the same', async () => {
    let calls = 0;
    const run = coalesce(async () => {
      calls++;
      await new Promise((resolve) => setTimeout(resolve, 10));
      if (calls === 1) throw new Error('no');
    }, 100);
    const first = run().catch((err: unknown) => err);
    const second = run();
    await vi.advanceTimersByTimeAsync(200);
    expect(await first).toBeInstanceOf(Error);
    await second;
    expect(calls).toBe(2);
  });
});
