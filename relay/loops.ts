/** Timing helpers of the relay agent: a loop that never overlaps itself, coalesced runs, a bounded wait. */
import type { Logger } from '../shared/logger.js';

export interface Loop {
  stop(): Promise<void>;
}

/** Runs `fn` now and then `intervalMs` after each run ends (never two at once). */
export function startLoop(intervalMs: number, fn: () => Promise<void>, logger: Logger, name: string): Loop {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const tick = () => {
    current = fn()
      .catch((err: unknown) => logger.warn(`${name} failed`, { error: err }))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}

/**
 * Wraps `fn` so that calls while one run is under way share a single follow-up run, which starts
 * after it: every caller's state is covered by the run it awaits, and runs never overlap. Runs
 * start at least `minGapMs` apart: a call sooner after the last start waits for the gap, and every
 * call meanwhile shares that run.
 */
export function coalesce(fn: () => Promise<void>, minGapMs = 0): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  let startedAt = Number.NEGATIVE_INFINITY;
  const launch = (): Promise<void> => {
    startedAt = Date.now();
    const run = fn().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  const gap = () => new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + minGapMs - Date.now())));
  return () => {
    if (!running && !queued && Date.now() - startedAt >= minGapMs) return launch();
    queued ??= (running ?? Promise.resolve())
      .catch(() => undefined)
      .then(gap)
      .then(() => {
        queued = undefined;
        return launch();
      });
    return queued;
  };
}

/** Waits for `promise`, or `ms` at most. */
export async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
