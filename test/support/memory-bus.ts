/**
 * A Bus in memory that keeps every message published and delivers them when told: to the real
 * handlers a test subscribes (test/support/memory-fleet.ts), one at a time, in publish order.
 * Topics can be held (a relay that never pulls, a function that is down), and a message whose body
 * carries a `dueAt` (a check's follow-up) waits until the clock reaches it; a handler that asks for
 * redelivery (a RetryableError) has its message set aside until `redeliver()`; any other failure
 * is thrown to the caller of `deliver()` (or kept in `errors` when delivering on its own).
 */
import type { Bus } from '../../shared/bus/pubsub.js';
import { decodeBody, type BusMessage } from '../../shared/bus/message.js';
import { RetryableError } from '../../shared/errors.js';
import type { Clock } from '../../shared/store/ports.js';

/** One published message, as kept. */
export interface Published {
  topic: string;
  data: unknown;
  attributes: Record<string, string>;
  message: BusMessage;
}

/** One `deliver()` gives up after this many messages (a loop of messages that never settles). */
const MAX_DELIVERIES = 5_000;

export type Subscriber = (message: BusMessage) => Promise<unknown>;

export class MemoryBus implements Bus {
  /** Every message ever published, in order. */
  readonly published: Published[] = [];
  /** Messages not delivered yet. */
  private readonly queue: Published[] = [];
  /** Messages whose handler failed: Pub/Sub would redeliver them after a backoff. */
  private readonly failed: Published[] = [];
  private readonly held = new Set<string>();
  private readonly subscribers = new Map<string, Subscriber[]>();
  private pumping: Promise<void> | undefined;
  private auto = false;
  /** Failures of deliveries started by `autoDeliver` (nobody awaited them): `close()` rethrows the first. */
  readonly errors: unknown[] = [];

  constructor(private readonly clock: Clock) {}

  publish(
    topic: string,
    data: unknown,
    attributes: Record<string, string> = {},
    sign?: (body: string) => Record<string, string>,
  ): Promise<string> {
    const id = `m-${this.published.length + 1}`;
    const text = JSON.stringify(data);
    const all = { ...attributes, ...sign?.(text) };
    const entry = { topic, data, attributes: all, message: decodeBody(id, this.clock.now(), all, text) };
    this.published.push(entry);
    this.queue.push(entry);
    if (this.auto) void this.deliver();
    return Promise.resolve(id);
  }

  subscribe(topic: string, handler: Subscriber): void {
    this.subscribers.set(topic, [...(this.subscribers.get(topic) ?? []), handler]);
  }

  /** Stops delivering `topic` until `release`. */
  hold(topic: string): void {
    this.held.add(topic);
  }

  release(topic: string): void {
    this.held.delete(topic);
    if (this.auto) void this.deliver();
  }

  /** Delivers every message as soon as it is published, as Pub/Sub push does. */
  autoDeliver(): void {
    this.auto = true;
    void this.deliver();
  }

  /** Puts the messages whose handlers failed back in the queue (their backoff is over). */
  redeliver(): void {
    this.queue.push(...this.failed.splice(0));
    if (this.auto) void this.deliver();
  }

  /** Messages waiting on `topic` (held or not yet delivered). */
  pending(topic: string): Published[] {
    return this.queue.filter((m) => m.topic === topic);
  }

  /** A follow-up (a body with `dueAt`) is delivered once the clock has reached it. */
  private due(m: Published): boolean {
    const { data } = m;
    if (typeof data !== 'object' || data === null || !('dueAt' in data)) return true;
    return typeof data.dueAt !== 'number' || data.dueAt <= this.clock.now();
  }

  /** Delivers queued messages of topics not held (and due), and those they publish, until none is left. */
  deliver(): Promise<void> {
    this.pumping ??= this.pump().finally(() => (this.pumping = undefined));
    return this.pumping;
  }

  private async pump(): Promise<void> {
    for (let delivered = 0; ; delivered++) {
      if (delivered === MAX_DELIVERIES)
        throw new Error(
          `still delivering after ${MAX_DELIVERIES} messages: ${this.queue.map((m) => m.topic).join(', ')}`,
        );
      const next = this.queue.findIndex((m) => !this.held.has(m.topic) && this.due(m));
      if (next < 0) return;
      const [entry] = this.queue.splice(next, 1);
      if (!entry) return;
      for (const handler of this.subscribers.get(entry.topic) ?? []) {
        try {
          await handler(entry.message);
        } catch (err) {
          this.failed.push(entry);
          // Asking for redelivery is how a handler says "look again soon"; anything else is a bug.
          if (err instanceof RetryableError) continue;
          if (this.auto) this.errors.push(err);
          else throw err;
        }
      }
    }
  }
}
