/** Clocks: the system's, and one a test advances explicitly. */
import type { Clock } from './ports.js';

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that moves only when told (tests: leases, heartbeats and grace periods without sleeping). */
export class ManualClock implements Clock {
  constructor(private ms: number = Date.UTC(2026, 0, 1)) {}

  now(): number {
    return this.ms;
  }

  /** Moves the clock forward by `ms`. */
  advance(ms: number): void {
    if (!(ms >= 0)) throw new RangeError(`advance: ms must be a non-negative number, got ${ms}`);
    this.ms += ms;
  }
}
