/** Publishing to Pub/Sub with the W3C trace context in the message attributes. */
import { SpanKind } from '@opentelemetry/api';
import type { PubSub } from '@google-cloud/pubsub';
import { inSpan } from '../telemetry/spans.js';
import { attributesFromContext } from '../telemetry/propagation.js';

/** Publishes JSON messages. */
export interface Bus {
  /**
   * @param topic - topic id (not the full path)
   * @param data - JSON-serialisable payload
   * @param attributes - string attributes; `traceparent` is added from the publish span
   * @returns the message id
   */
  publish(topic: string, data: unknown, attributes?: Record<string, string>): Promise<string>;
}

/** Attributes carrying the active trace context (`traceparent`, `tracestate`). */
export function traceAttributes(): Record<string, string> {
  return attributesFromContext();
}

/**
 * A bus on the Pub/Sub client. Each publish is a PRODUCER span `send <topic>` (messaging semantic
 * conventions) whose context travels in the attributes, so the receiving span is its child.
 */
export function createPubSubBus(pubsub: PubSub): Bus {
  const topics = new Map<string, ReturnType<PubSub['topic']>>();
  return {
    async publish(topic, data, attributes = {}) {
      let handle = topics.get(topic);
      if (!handle) {
        handle = pubsub.topic(topic, { batching: { maxMessages: 100, maxMilliseconds: 5 } });
        topics.set(topic, handle);
      }
      const body = Buffer.from(JSON.stringify(data));
      const messaging = {
        'messaging.system': 'gcp_pubsub',
        'messaging.operation.type': 'send',
        'messaging.operation.name': 'send',
        'messaging.destination.name': topic,
        'messaging.message.body.size': body.length,
      };
      return inSpan(`send ${topic}`, { kind: SpanKind.PRODUCER, attributes: messaging }, async (span) => {
        const id = await handle.publishMessage({ data: body, attributes: { ...traceAttributes(), ...attributes } });
        span.setAttribute('messaging.message.id', id);
        return id;
      });
    },
  };
}
