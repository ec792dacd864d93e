/** The client library's streaming pull as a command subscription (tests and the bench; the relay process pulls synchronously). */
import type { PubSub } from '@google-cloud/pubsub';
import type { CommandSubscription } from './command-subscription.js';

/**
 * @param pubsub - the client the subscription is opened on
 * @param name - the subscription id
 * @param maxInFlight - messages handed out and not yet acked or nacked, at most (no excess leases)
 */
export function createStreamingSubscription(pubsub: PubSub, name: string, maxInFlight: number): CommandSubscription {
  return pubsub.subscription(name, { flowControl: { maxMessages: maxInFlight, allowExcessMessages: false } });
}
