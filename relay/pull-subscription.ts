/**
 * Synchronous pull for the relay's command subscription. Streaming pull was dropped here: when a
 * relay dies without closing its streams (SIGKILL, power loss), the Pub/Sub emulator kept handing
 * new messages to the dead streams until their ack deadline passed, so a restarted relay saw
 * commands tens of seconds late (measured: 1 of 5 commands delivered in 8 s). A pull request only
 * receives messages while someone waits on it.
 */
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { v1, type protos, type PubSub } from '@google-cloud/pubsub';
import type { CommandMessage, CommandSubscription } from './command-subscription.js';

/** Short, so that a pull left behind by a relay that died cannot swallow new commands for long. */
const LONG_POLL_MS = 10_000;
const DEADLINE_EXCEEDED = 4;

/**
 * @param pubsub - its options (emulator host, credentials) are reused for the pull client
 * @param name - the subscription id
 * @param maxInFlight - messages handed out and not yet acked or nacked, at most
 */
export function createPullSubscription(pubsub: PubSub, name: string, maxInFlight: number): CommandSubscription {
  const client = subscriberClient(pubsub);
  const subscription = `projects/${pubsub.projectId}/subscriptions/${name}`;
  const events = new EventEmitter();
  let closed = false;
  let inFlight = 0;
  let current: { cancel?: () => void } | undefined;
  let wake: (() => void) | undefined;
  const pending = new Set<Promise<void>>();

  const settle = (ackId: string, ack: boolean) => {
    inFlight--;
    wake?.();
    const settled = settleOnServer(client, subscription, ackId, ack, events);
    pending.add(settled);
    void settled.finally(() => pending.delete(settled));
  };

  const loop = async () => {
    while (!closed) {
      if (inFlight >= maxInFlight) {
        await new Promise<void>((resolve) => (wake = resolve));
        continue;
      }
      try {
        const call = client.pull({ subscription, maxMessages: maxInFlight - inFlight }, { timeout: LONG_POLL_MS });
        current = call as { cancel?: () => void };
        const [response] = await call;
        for (const received of response.receivedMessages ?? []) {
          const message = commandMessage(received, settle);
          if (!message) continue;
          inFlight++;
          events.emit('message', message);
        }
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
      current?.cancel?.();
      wake?.();
      await running;
      await Promise.all([...pending]);
      await client.close();
    },
  };
}

/** A subscriber client with the options of `pubsub` (emulator host, credentials). */
function subscriberClient(pubsub: PubSub): v1.SubscriberClient {
  const { port, ...options } = pubsub.options;
  return new v1.SubscriberClient({ ...options, ...(port !== undefined ? { port: Number(port) } : {}) });
}

/**
 * Acks the message, or nacks it (ack deadline 0) so Pub/Sub redelivers it now.
 *
 * @returns resolves once the server answered; a failure goes to the `error` listeners, if any
 */
function settleOnServer(
  client: v1.SubscriberClient,
  subscription: string,
  ackId: string,
  ack: boolean,
  events: EventEmitter,
): Promise<void> {
  const done = ack
    ? client.acknowledge({ subscription, ackIds: [ackId] })
    : client.modifyAckDeadline({ subscription, ackIds: [ackId], ackDeadlineSeconds: 0 });
  // A lost ack only means a redelivery, which every command tolerates.
  return done.then(
    () => undefined,
    (err: unknown) => void (events.listenerCount('error') > 0 && events.emit('error', err)),
  );
}

type Received = protos.google.pubsub.v1.IReceivedMessage;

/** A pulled message as the relay's command loop takes it; undefined for one without data or ack id. */
function commandMessage(received: Received, settle: (ackId: string, ack: boolean) => void): CommandMessage | undefined {
  const m = received.message;
  const ackId = received.ackId;
  if (!m || !ackId) return undefined;
  const seconds = Number(m.publishTime?.seconds ?? 0);
  return {
    id: m.messageId ?? '',
    publishTime: new Date(seconds * 1000 + Math.floor((m.publishTime?.nanos ?? 0) / 1e6)),
    attributes: m.attributes ?? {},
    data: Buffer.from(m.data ?? ''),
    ack: () => settle(ackId, true),
    nack: () => settle(ackId, false),
  };
}
