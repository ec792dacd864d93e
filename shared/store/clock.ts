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

/** An update time as text: RFC 3339 with all nine fractional digits (exact, and ordered as text). */
export function updateTimeText(seconds: number, nanoseconds: number): string {
  return `${new Date(seconds * 1000).toISOString().slice(0, 19)}.${String(nanoseconds).padStart(9, '0')}Z`;
}

/**
 * Update times for an in-memory store: from the clock, at microsecond steps like Firestore's, and
 * strictly increasing (two writes in one clock millisecond still differ).
 */
export class UpdateTimes {
  private last = 0n;

  constructor(private readonly clock: Clock) {}

  next(): string {
    const fromClock = BigInt(Math.floor(this.clock.now())) * 1_000_000n;
    this.last = fromClock > this.last ? fromClock : this.last + 1_000n;
    return updateTimeText(Number(this.last / 1_000_000_000n), Number(this.last % 1_000_000_000n));
  }
}
