/** Polls until an assertion passes (for asynchronous backends), then returns its value. */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * @param fn - throws (or rejects) until the condition holds
 * @param timeoutMs - gives up after this long, rethrowing the last failure
 */
export async function eventually<T>(fn: () => Promise<T> | T, timeoutMs = 20_000, intervalMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await sleep(intervalMs);
    }
  }
}
