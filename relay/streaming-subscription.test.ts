/** The streaming subscription asks the client library for flow control without excess leases. */
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, expect, it, vi } from 'vitest';
import { createStreamingSubscription } from './streaming-subscription.js';

const pubsub = new PubSub({ projectId: 'streaming-test' });
afterAll(() => pubsub.close());

it('opens the subscription with maxMessages = maxInFlight and no excess messages', async () => {
  const opened = vi.spyOn(pubsub, 'subscription');
  const subscription = createStreamingSubscription(pubsub, 'relay-commands-local', 8);
  expect(opened.mock.calls[0]?.[0]).toBe('relay-commands-local');
  expect(opened.mock.calls[0]?.[1]).toMatchObject({ flowControl: { maxMessages: 8, allowExcessMessages: false } });
  await subscription.close();
});
