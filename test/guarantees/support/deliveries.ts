/**
 * At-least-once delivery as Pub/Sub does it, made worse on purpose: every message is delivered 1–N
 * times, each copy after a random delay, and a failed delivery (the handler threw) is redelivered
 * until it succeeds or reaches the dead-letter limit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { BusMessage } from '../../../shared/bus/message.js';
import type { BodySigner, Bus } from '../../../shared/bus/pubsub.js';
import { decodeBody } from '../../../shared/bus/message.js';
import type { Figures } from './figures.js';
import type { Rng } from './prng.js';

export interface DeliveryPolicy {
  /** Copies of each message: 1 to this many. */
  maxCopies: number;
  /** Each copy waits 0 to this many milliseconds. */
  maxDelayMs: number;
  /** Attempts per copy before it is dead-lettered (the subscriptions say 10). */
  maxAttempts: number;
  /**
   * The subscription's retry policy, scaled down (production: 10 s to 600 s): a redelivery (the
   * handler threw, or asked to be run again) waits `minBackoffMs` doubled per attempt, capped.
   */
  minBackoffMs: number;
  maxBackoffMs: number;
}

export const STORM: DeliveryPolicy = {
  maxCopies: 4,
  maxDelayMs: Number(process.env['GUARANTEE_MAX_DELAY_MS'] ?? 1000),
  maxAttempts: 10,
  minBackoffMs: Number(process.env['GUARANTEE_MIN_BACKOFF_MS'] ?? 500),
  maxBackoffMs: Number(process.env['GUARANTEE_MAX_BACKOFF_MS'] ?? 2000),
};

/** What handling one delivery came to: done, or "deliver me again in `ms`" (the check function throws). */
export type Handled = { redeliverAfterMs?: number } | void;

let sequence = 0;

/** Tracks every delivery in flight so a test can wait for quiet. */
export class Deliveries {
  /** Each delivery in flight, with its kind. */
  private readonly inFlight = new Map<Promise<void>, string>();

  constructor(
    private readonly figures: Figures,
    private readonly policy: DeliveryPolicy = STORM,
  ) {}

  /**
   * Delivers one message 1–maxCopies times (`copies` overrides), each after a random delay.
   * @returns when every copy was handled or dead-lettered (also awaited by {@link drain})
   */
  send(rng: Rng, kind: string, handle: () => Promise<Handled>, copies?: number): Promise<void> {
    const n = copies ?? rng.int(1, this.policy.maxCopies);
    this.figures.add(`${kind}Messages`);
    this.figures.add(`${kind}Deliveries`, n);
    this.figures.add(`${kind}Duplicated`, n - 1);
    const all = [];
    for (let i = 0; i < n; i++) all.push(this.copy(kind, rng.int(0, this.policy.maxDelayMs), rng.fork(), handle));
    const tracked: Promise<void> = Promise.all(all)
      .then(() => undefined)
      .finally(() => this.inFlight.delete(tracked));
    this.inFlight.set(tracked, kind);
    return tracked;
  }

  /**
   * Waits until no delivery is in flight (deliveries may schedule more), leaving out deliveries of
   * the kind `except` (a kind that never stops coming, such as the follow-ups of a proxy that stays
   * Unhealthy).
   */
  async drain(except?: string): Promise<void> {
    for (;;) {
      const waiting = [...this.inFlight].flatMap(([task, kind]) => (kind === except ? [] : [task]));
      if (waiting.length === 0) return;
      await Promise.all(waiting);
    }
  }

  private async copy(kind: string, delayMs: number, rng: Rng, handle: () => Promise<Handled>): Promise<void> {
    await sleep(delayMs);
    for (let attempt = 1; ; attempt++) {
      try {
        const handled = await handle();
        if (!handled || handled.redeliverAfterMs === undefined) return;
      } catch (err) {
        this.figures.add(`${kind}Failed`);
        if (process.env['GUARANTEE_DEBUG']) {
          const where = (err instanceof Error ? (err.stack ?? '') : '')
            .split('\n')
            .filter((l) => l.includes('/shared/'));
          console.log(`${kind} delivery failed: ${String(err).slice(0, 100)} ${where.slice(0, 2).join(' <- ')}`);
        }
      }
      if (attempt >= this.policy.maxAttempts) {
        this.figures.add(`${kind}DeadLettered`);
        return;
      }
      this.figures.add(`${kind}Redelivered`);
      const backoff = Math.min(this.policy.maxBackoffMs, this.policy.minBackoffMs * 2 ** (attempt - 1));
      await sleep(backoff + rng.int(0, backoff / 4));
    }
  }
}

/** A message as a push subscription hands it to a function: JSON on the wire, decoded again. */
export function onTheWire(
  data: unknown,
  publishTime = Date.now(),
  attributes: Record<string, string> = {},
  sign?: BodySigner,
): BusMessage {
  const text = JSON.stringify(data);
  return decodeBody(`msg-${++sequence}`, publishTime, { ...attributes, ...sign?.(text) }, text);
}

/**
 * A bus whose messages on the routed topics are delivered through `deliveries` (duplicated,
 * delayed; at most `maxCopies` copies when given); other topics are dropped.
 */
export function deliveringBus(
  deliveries: Deliveries,
  rng: Rng,
  routes: Record<string, (message: BusMessage) => Promise<Handled>>,
  maxCopies?: number,
): Bus {
  return {
    publish(topic, data, attributes = {}, sign) {
      const route = routes[topic];
      if (!route) return Promise.resolve(`dropped-${++sequence}`);
      const message = onTheWire(data, Date.now(), attributes, sign);
      void deliveries.send(rng, topic, () => route(message), maxCopies && rng.int(1, maxCopies));
      return Promise.resolve(message.id);
    },
  };
}

/** A bus that publishes every message 1–maxCopies times to `inner`, each copy after a random delay. */
export function duplicatingBus(inner: Bus, deliveries: Deliveries, rng: Rng, kind: string): Bus {
  return {
    publish(topic, data, attributes, sign) {
      const id = `dup-${++sequence}`;
      void deliveries.send(rng, kind, async () => void (await inner.publish(topic, data, attributes, sign)));
      return Promise.resolve(id);
    },
  };
}

/**
 * Delivers one request to the request function 1–maxCopies times. Resolves once a copy has been
 * handled: the request is then in the store (later copies are duplicates); the rest keep arriving
 * in the background.
 */
export function deliverRequest(deliveries: Deliveries, rng: Rng, handle: () => Promise<unknown>): Promise<void> {
  return new Promise<void>((handled) => {
    void deliveries.send(rng, 'request', async () => {
      await handle();
      handled();
    });
  });
}
