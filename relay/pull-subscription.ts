/**
 * Synchronous pull for the relay's command subscription. Streaming pull was dropped here: when a
 * relay dies without closing its streams (SIGKILL, power loss), the Pub/Sub emulator kept handing
 * new messages to the dead streams until their ack deadline passed, so a restarted relay saw
 * commands tens of seconds late (measured: 1 of 5 commands delivered in 8 s). A pull request only
 * receives messages while someone waits on it.
 *
 * A pull the client gives up on (its deadline passed first, it was cancelled, its connection
 * broke) may still have been answered: Pub/Sub counts the messages of that answer as delivered, and
 * hands them out again only when their ack deadline runs out. That deadline is therefore short
 * (`relaySubscription.ackDeadlineSeconds` in infra/topology.yaml), and every message this relay
 * does hold is leased for longer at once and again while it is handled ({@link LEASE_SECONDS}).
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { v1, type protos, type PubSub } from '@google-cloud/pubsub';
import type { CommandMessage, CommandSubscription } from './command-subscription.js';

/** Short, so that a pull left behind by a relay that died cannot swallow new commands for long. */
const LONG_POLL_MS = 10_000;
const DEADLINE_EXCEEDED = 4;
/** How long a message this relay received stays its own: renewed every third of it until settled. */
export const LEASE_SECONDS = 60;

type PullRequest = protos.google.pubsub.v1.IPullRequest;
type PullResponse = protos.google.pubsub.v1.IPullResponse;

/** A pull under way; `cancel()` ends it at once, failing it with CANCELLED. */
export type PendingPull = Promise<[PullResponse, ...unknown[]]> & { cancel(): void };

/** The calls the pull loop makes: the v1 `SubscriberClient`'s ({@link subscriberApi}; a test passes a fake). */
export interface SubscriberApi extends Pick<v1.SubscriberClient, 'acknowledge' | 'modifyAckDeadline' | 'close'> {
  pull(request: PullRequest, options: { timeout: number }): PendingPull;
}

/** What tests change: the client, and how often held messages are leased again. */
export interface PullOptions {
  client?: SubscriberApi;
  renewEveryMs?: number;
}

/**
 * @param pubsub - its options (emulator host, credentials) are reused for the pull client
 * @param name - the subscription id
 * @param maxInFlight - messages handed out and not yet acked or nacked, at most
 */
export function createPullSubscription(
  pubsub: PubSub,
  name: string,
  maxInFlight: number,
  options: PullOptions = {},
): CommandSubscription {
  const client = options.client ?? subscriberApi(pubsub);
  const subscription = `projects/${pubsub.projectId}/subscriptions/${name}`;
  const events = new EventEmitter();
  let closed = false;
  let current: PendingPull | undefined;
  let wake: (() => void) | undefined;
  const requests = new Requests(events);
  /** Ack ids of the messages handed out and not yet settled (their count is the in-flight count). */
  const held = new Set<string>();
  /**
   * Each held message's latest lease request. Its ack or nack goes out only once that request is
   * answered: Pub/Sub does not order separate requests, and a lease landing after a nack would hide
   * the message for LEASE_SECONDS instead of handing it out again now.
   */
  const leased = new Map<string, Promise<void>>();
  const lease = (ackIds: string[]) => {
    const done = requests.track(client.modifyAckDeadline({ subscription, ackIds, ackDeadlineSeconds: LEASE_SECONDS }));
    for (const id of ackIds) leased.set(id, done);
  };
  /** Acks, or nacks (ack deadline 0: Pub/Sub hands them out again now), after their leases. */
  const release = (ackIds: string[], ack: boolean) => {
    const leases = Promise.all(ackIds.map((id) => leased.get(id) ?? Promise.resolve()));
    for (const id of ackIds) leased.delete(id);
    void requests.track(
      leases.then(() =>
        ack
          ? client.acknowledge({ subscription, ackIds })
          : client.modifyAckDeadline({ subscription, ackIds, ackDeadlineSeconds: 0 }),
      ),
    );
  };
  const renewal = setInterval(
    () => held.size > 0 && lease([...held]),
    options.renewEveryMs ?? (LEASE_SECONDS * 1000) / 3,
  );

  // A lost ack only means a redelivery, which every command tolerates.
  const settle = (ackId: string, ack: boolean) => {
    if (!held.delete(ackId)) return;
    wake?.();
    release([ackId], ack);
  };

  const loop = async () => {
    while (!closed) {
      if (held.size >= maxInFlight) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      try {
        current = client.pull({ subscription, maxMessages: maxInFlight - held.size }, { timeout: LONG_POLL_MS });
        const [response] = await current;
        const messages = (response.receivedMessages ?? []).flatMap((r) => commandMessage(r, settle) ?? []);
        for (const { ackId } of messages) held.add(ackId);
        if (messages.length > 0) lease(messages.map((m) => m.ackId));
        for (const { message } of messages) events.emit('message', message);
      } catch (err) {
        if (closed) return;
        if ((err as { code?: unknown }).code === DEADLINE_EXCEEDED) continue;
        events.emit('error', err);
        await sleep(1000);
      }
    }
  };
  const running = loop();

  return {
    on(event: 'message' | 'error', listener: ((message: CommandMessage) => void) | ((err: unknown) => void)) {
      events.on(event, listener);
      return this;
    },
    removeListener(event, listener) {
      events.removeListener(event, listener);
      return this;
    },
    async close() {
      closed = true;
      clearInterval(renewal);
      current?.cancel();
      wake?.();
      await running;
      // What is still held is handed back now, not left leased for up to LEASE_SECONDS (a relay
      // restarting would wait that long for it); a handler settling it later is a no-op.
      const left = [...held];
      held.clear();
      if (left.length > 0) release(left, false);
      await requests.idle();
      await client.close();
    },
  };
}

/** The ack, nack and lease requests under way; a failure goes to the `error` listeners, if any. */
class Requests {
  private readonly pending = new Set<Promise<void>>();
  constructor(private readonly events: EventEmitter) {}

  /** @returns resolves once the request is answered or failed (never rejects) */
  track(request: Promise<unknown>): Promise<void> {
    const done = request.then(
      () => undefined,
      (err: unknown) => void (this.events.listenerCount('error') > 0 && this.events.emit('error', err)),
    );
    this.pending.add(done);
    void done.finally(() => this.pending.delete(done));
    return done;
  }

  async idle(): Promise<void> {
    await Promise.all([...this.pending]);
  }
}

/**
 * The subscriber calls, on a client with the options of `pubsub` (emulator host, credentials), with
 * a pull that can be cancelled. The generated `pull` (@google-cloud/pubsub 5.3.1) chains `.then`
 * onto gax's call and so drops the call's `cancel`; `innerApiCalls.pull`, which it wraps, keeps it
 * (set by `initialize()`, synchronously). Without it close() waited out the long poll, up to
 * {@link LONG_POLL_MS}: the local stack's 5 s grace SIGKILLed every relay it stopped, before its
 * final report and the hand-back of what it held.
 */
export function subscriberApi(pubsub: PubSub): SubscriberApi {
  const { port, ...options } = pubsub.options;
  const client = new v1.SubscriberClient({ ...options, ...(port !== undefined ? { port: Number(port) } : {}) });
  // A failed initialization fails every call made with it, where it is handled.
  client.initialize().catch(() => undefined);
  const pull = client.innerApiCalls['pull'] as (request: PullRequest, options: object) => PendingPull;
  return {
    pull: (request, options) =>
      // The routing header the generated method adds: Pub/Sub routes the call by subscription.
      pull(request, {
        ...options,
        otherArgs: {
          headers: { 'x-goog-request-params': `subscription=${encodeURIComponent(request.subscription ?? '')}` },
        },
      }),
    acknowledge: client.acknowledge.bind(client),
    modifyAckDeadline: client.modifyAckDeadline.bind(client),
    close: client.close.bind(client),
  };
}

type Received = protos.google.pubsub.v1.IReceivedMessage;

/** A pulled message as the relay's command loop takes it; undefined for one without data or ack id. */
function commandMessage(
  received: Received,
  settle: (ackId: string, ack: boolean) => void,
): { ackId: string; message: CommandMessage } | undefined {
  const m = received.message;
  const ackId = received.ackId;
  if (!m || !ackId) return undefined;
  const seconds = Number(m.publishTime?.seconds ?? 0);
  const message: CommandMessage = {
    id: m.messageId ?? '',
    publishTime: new Date(seconds * 1000 + Math.floor((m.publishTime?.nanos ?? 0) / 1e6)),
    attributes: m.attributes ?? {},
    data: Buffer.from(m.data ?? ''),
    ack: () => settle(ackId, true),
    nack: () => settle(ackId, false),
  };
  return { ackId, message };
}
