/**
 * The gateway's demand per pool (docs/gateway.md "Demand and wake-from-zero"): requests in flight,
 * started per second, and held waiting for a sleeping pool, reported to the API every interval for
 * the pools used in it or the one before, and at once when a request starts waiting.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../shared/logger.js';
import type { DemandAnswer, FleetApi } from './fleet-api.js';

/** How often demand is reported (default): the API's autoscaler reads it at its own interval. */
export const DEMAND_INTERVAL_MS = 5000;

interface Tally {
  inFlight: number;
  started: number;
  waiting: number;
  /** Whether the last report carried demand: one more report says it is gone. */
  reported: boolean;
  /** Members this gateway's sessions hold, per router scoped to the pool. */
  holders: Set<() => string[]>;
}

export class DemandReporter {
  /** A new id per gateway process: its reports expire when it stops. */
  readonly gateway = `gw-${randomBytes(5).toString('hex')}`;
  private readonly pools = new Map<string, Tally>();
  private readonly now: () => number;
  private readonly intervalMs: number;
  /** Increasing across restarts too: the start time in ms, times 1000, plus a counter. */
  private sequence: number;
  private lastFlushAt: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly fleet: Pick<FleetApi, 'demand'>,
    options: { intervalMs?: number; logger?: Logger | undefined; now?: () => number } = {},
    private readonly logger = options.logger,
  ) {
    this.now = options.now ?? Date.now;
    this.intervalMs = options.intervalMs ?? DEMAND_INTERVAL_MS;
    this.sequence = this.now() * 1000;
    this.lastFlushAt = this.now();
  }

  start(): void {
    this.timer ??= setInterval(() => void this.flush(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private tally(pool: string): Tally {
    let t = this.pools.get(pool);
    if (!t) {
      t = { inFlight: 0, started: 0, waiting: 0, reported: false, holders: new Set() };
      this.pools.set(pool, t);
    }
    return t;
  }

  /** A request or tunnel for `pool` starts; call the returned function when it ends. */
  begin(pool: string): () => void {
    const t = this.tally(pool);
    t.inFlight++;
    t.started++;
    let ended = false;
    return () => {
      if (!ended) t.inFlight--;
      ended = true;
    };
  }

  /** The members a router's sessions hold (reported so the autoscaler keeps them); returns the unregistration. */
  holdSessions(pool: string, members: () => string[]): () => void {
    const t = this.tally(pool);
    t.holders.add(members);
    return () => t.holders.delete(members);
  }

  /**
   * A request for `pool` starts waiting for a Ready member: reported at once.
   *
   * @returns the API's answer, and the function that ends the wait
   * @throws FleetApiError when the API refuses the report (404: no such pool)
   */
  async wait(pool: string): Promise<{ answer: DemandAnswer; done: () => void }> {
    const t = this.tally(pool);
    t.waiting++;
    let ended = false;
    const done = () => {
      if (!ended) t.waiting--;
      ended = true;
    };
    try {
      return { answer: await this.send(pool, t, this.now()), done };
    } catch (err) {
      done();
      throw err;
    }
  }

  /** Reports every pool used in this interval or reported in the last one (only those). */
  async flush(): Promise<void> {
    const now = this.now();
    const sends: Promise<unknown>[] = [];
    for (const [pool, t] of this.pools) {
      const used = t.inFlight > 0 || t.started > 0 || t.waiting > 0;
      if (used || t.reported)
        sends.push(
          this.send(pool, t, now).catch((err: unknown) =>
            this.logger?.warn('demand report failed', { pool, error: String(err) }),
          ),
        );
      else if (t.holders.size === 0) this.pools.delete(pool);
    }
    this.lastFlushAt = now;
    await Promise.all(sends);
  }

  private async send(pool: string, t: Tally, now: number): Promise<DemandAnswer> {
    if (!this.fleet.demand) return { autoscaled: false };
    const seconds = Math.max(1, (now - this.lastFlushAt) / 1000);
    const report = {
      gateway: this.gateway,
      sequence: ++this.sequence,
      inFlight: t.inFlight,
      startedPerSecond: Math.round((t.started / seconds) * 100) / 100,
      waiting: t.waiting,
      intervalSeconds: this.intervalMs / 1000,
      held: [...new Set([...t.holders].flatMap((members) => members()))].slice(0, 200),
    };
    t.started = 0;
    t.reported = report.inFlight > 0 || report.waiting > 0 || report.startedPerSecond > 0;
    return this.fleet.demand(pool, report);
  }
}
