/**
 * The gateway's demand and usage per pool (docs/gateway.md "Demand and wake-from-zero"): requests
 * in flight, started per second, and held waiting for a sleeping pool, and the counters of requests,
 * answered requests and bytes, reported to the API every interval for the pools used in it or the
 * one before, and at once when a request starts waiting.
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../shared/logger.js';
import type { DemandAnswer, FleetApi } from './fleet-api.js';

/** How often demand is reported (default): the API's autoscaler reads it at its own interval. */
export const DEMAND_INTERVAL_MS = 5000;
/**
 * A pool's usage counters begin again (a new series) after this long without a report the API
 * took: the API keeps a gateway's document two days past its last report (demand-rules.ts
 * USAGE_KEEP_MS), so counters are never sent to a document made again after its deletion.
 */
export const USAGE_SERIES_MS = 86_400_000;

/** Counters of one series: they only grow until the series ends. */
interface Series {
  since: number;
  requests: number;
  succeeded: number;
  bytesIn: number;
  bytesOut: number;
  /** Counts changed since the last report the API took. */
  dirty: boolean;
  /** When the API last took a report of this series (or when the series began). */
  ackedAt: number;
}

interface Tally {
  inFlight: number;
  started: number;
  waiting: number;
  /** Whether the last report carried demand: one more report says it is gone. */
  reported: boolean;
  /** Members this gateway's sessions hold, per router scoped to the pool. */
  holders: Set<() => string[]>;
  /** The report a request starting to wait sent at once, shared by those that start waiting within the interval. */
  woken?: { at: number; answer: Promise<DemandAnswer> };
  usage: Series;
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
      t = { inFlight: 0, started: 0, waiting: 0, reported: false, holders: new Set(), usage: this.series() };
      this.pools.set(pool, t);
    }
    return t;
  }

  /** The pool's series to count in: a new one when the API took none of its reports for {@link USAGE_SERIES_MS}. */
  private counting(t: Tally): Series {
    if (this.now() - t.usage.ackedAt > USAGE_SERIES_MS) t.usage = this.series();
    return t.usage;
  }

  private series(): Series {
    return {
      since: ++this.sequence,
      requests: 0,
      succeeded: 0,
      bytesIn: 0,
      bytesOut: 0,
      dirty: false,
      ackedAt: this.now(),
    };
  }

  /**
   * A request or tunnel for `pool` starts; call the returned function when it has been routed,
   * with whether a member answered it (a response head, an established tunnel).
   */
  begin(pool: string): (answered: boolean) => void {
    const t = this.tally(pool);
    t.inFlight++;
    t.started++;
    const u = this.counting(t);
    u.requests++;
    u.dirty = true;
    let ended = false;
    return (answered) => {
      if (ended) return;
      ended = true;
      t.inFlight--;
      if (!answered) return;
      // The series may have been replaced meanwhile: count in the current one.
      const now = this.counting(this.tally(pool));
      now.succeeded = Math.min(now.requests, now.succeeded + 1);
      now.dirty = true;
    };
  }

  /** The bytes of one answered request or closed tunnel through `pool`: received from the member, and sent to it. */
  bytes(pool: string, received: number, sent: number): void {
    const u = this.counting(this.tally(pool));
    u.bytesIn += received;
    u.bytesOut += sent;
    u.dirty = true;
  }

  /** The members a router's sessions hold (reported so the autoscaler keeps them); returns the unregistration. */
  holdSessions(pool: string, members: () => string[]): () => void {
    const t = this.tally(pool);
    t.holders.add(members);
    return () => t.holders.delete(members);
  }

  /**
   * A request for `pool` starts waiting for a Ready member: reported at once, unless another
   * request's wait was reported within the interval (a burst at a sleeping pool costs one report,
   * one write, not one each: its count goes with the next regular report).
   *
   * @returns the API's answer, and the function that ends the wait
   * @throws ApiError when the API refuses the report (404: no such pool)
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
      const now = this.now();
      let woken = t.woken;
      if (!woken || now - woken.at >= this.intervalMs) {
        const sent = { at: now, answer: this.send(pool, t, now) };
        // A refused report is not shared: the next request to wait asks again.
        sent.answer.catch(() => {
          if (t.woken === sent) t.woken = undefined;
        });
        t.woken = woken = sent;
      }
      return { answer: await woken.answer, done };
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
      const used = t.inFlight > 0 || t.started > 0 || t.waiting > 0 || t.usage.dirty;
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
    const { dirty: _d, ackedAt: _a, ...counts } = t.usage;
    const report = {
      gateway: this.gateway,
      sequence: ++this.sequence,
      inFlight: t.inFlight,
      startedPerSecond: Math.round((t.started / seconds) * 100) / 100,
      waiting: t.waiting,
      intervalSeconds: this.intervalMs / 1000,
      held: [...new Set([...t.holders].flatMap((members) => members()))].slice(0, 200),
      usage: counts,
    };
    t.started = 0;
    t.reported = report.inFlight > 0 || report.waiting > 0 || report.startedPerSecond > 0;
    const series = t.usage;
    series.dirty = false;
    try {
      const answer = await this.fleet.demand(pool, report);
      series.ackedAt = this.now();
      return answer;
    } catch (err) {
      // Counters, not increments: the next report carries these counts again.
      series.dirty = true;
      throw err;
    }
  }
}
