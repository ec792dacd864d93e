/** The port the relay agent pulls its commands through; `relay/pull-subscription.ts` implements it on Pub/Sub. */

/** What the agent needs of a received command message. */
export interface CommandMessage {
  id: string;
  publishTime: Date;
  attributes: Record<string, string>;
  data: Buffer;
  ack(): void;
  nack(): void;
}

/** What the agent needs of a subscription (the client library's streaming `Subscription` also fits). */
export interface CommandSubscription {
  on(event: 'message', listener: (message: CommandMessage) => void): unknown;
  on(event: 'error', listener: (err: unknown) => void): unknown;
  removeListener(event: 'message', listener: (message: CommandMessage) => void): unknown;
  close(): Promise<void>;
}

/**
 * Opens a subscription.
 * @param name - the subscription id
 * @param maxInFlight - messages handed out and not yet acked or nacked, at most
 */
export type OpenCommandSubscription = (name: string, maxInFlight: number) => CommandSubscription;
