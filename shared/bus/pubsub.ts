/** Publishing to Pub/Sub with the W3C trace context in the message attributes. */
import { context, propagation } from '@opentelemetry/api';
import type { PubSub } from '@google-cloud/pubsub';

/** Publishes JSON messages. */
export interface Bus {
  /**
   * @param topic - topic id (not the full path)
   * @param data - JSON-serialisable payload
   * @param attributes - string attributes; `traceparent` is added from the active context
   * @returns the message id
   */
  publish(topic: string, data: unknown, attributes?: Record<string, string>): Promise<string>;
}

/** Attributes carrying the active trace context (`traceparent`, `tracestate`). */
export function traceAttributes(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(context.active(), carrier);
  return carrier;
}

export function createPubSubBus(pubsub: PubSub): Bus {
  const topics = new Map<string, ReturnType<PubSub['topic']>>();
  return {
    async publish(topic, data, attributes = {}) {
      let handle = topics.get(topic);
      if (!handle) {
        handle = pubsub.topic(topic, { batching: { maxMessages: 100, maxMilliseconds: 5 } });
        topics.set(topic, handle);
      }
      return handle.publishMessage({
        data: Buffer.from(JSON.stringify(data)),
        attributes: { ...traceAttributes(), ...attributes },
      });
    },
  };
}
