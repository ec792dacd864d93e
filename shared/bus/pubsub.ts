/** Publishing to Pub/Sub with the W3C trace context in the message attributes. */
import { SpanKind } from '@opentelemetry/api';
import type { PubSub } from '@google-cloud/pubsub';
import { inSpan } from '../telemetry/spans.js';
import { attributesFromContext } from '../telemetry/propagation.js';

/** Attributes computed from the exact body a message is sent with (a signature). */
export type BodySigner = (body: string) => Record<string, string>;

/** Publishes JSON messages. */
export interface Bus {
  /**
   * @param topic - topic id (not the full path)
   * @param data - JSON-serialisable payload
   * @param attributes - string attributes; `traceparent` is added from the publish span
   * @param sign - when given, its attributes (over the exact body text sent) are added too
   * @returns the message id
   */
  publish(topic: string, data: unknown, attributes?: Record<string, string>, sign?: BodySigner): Promise<string>;
}

/** Attributes carrying the active trace context (`traceparent`, `tracestate`). */
export function traceAttributes(): Record<string, string> {
  return attributesFromContext();
}

/** Sends one encoded message; resolves with its id. */
export type SendMessage = (topic: string, data: Buffer, attributes: Record<string, string>) => Promise<string>;

/**
 * A bus over a way of sending one message. Each publish is a PRODUCER span `send <topic>`
 * (messaging semantic conventions) whose context travels in the attributes, so the receiving span
 * is its child. The body is serialised once; a signature covers exactly those bytes.
 */
export function createBus(send: SendMessage): Bus {
  return {
    publish(topic, data, attributes = {}, sign) {
      const text = JSON.stringify(data);
      const body = Buffer.from(text);
      const messaging = {
        'messaging.system': 'gcp_pubsub',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': topic,
        'messaging.message.body.size': body.length,
      };
      return inSpan(`send ${topic}`, { kind: SpanKind.PRODUCER, attributes: messaging }, async (span) => {
        const id = await send(topic, body, { ...traceAttributes(), ...attributes, ...sign?.(text) });
        span.setAttribute('messaging.message.id', id);
        return id;
      });
    },
  };
}

/** A bus on the Pub/Sub client library (the relay, which also pulls, and tests). */
export function createPubSubBus(pubsub: PubSub): Bus {
  const topics = new Map<string, ReturnType<PubSub['topic']>>();
  return createBus((topic, data, attributes) => {
    let handle = topics.get(topic);
    if (!handle) {
      handle = pubsub.topic(topic, { batching: { maxMessages: 100, maxMilliseconds: 5 } });
      topics.set(topic, handle);
    }
    return handle.publishMessage({ data, attributes });
  });
}
