/**
 * The messages Pub/Sub gave up on during a chaos run: what the `dead-letters-audit` subscription
 * holds (the topology dead-letters after `maxDeliveryAttempts`), read through the emulator's REST
 * interface. A dead-lettered request is a request lost to its client.
 */
import { loadTopology } from '../../infra/local/topology.js';
import { TOPICS } from '../../shared/bus/topics.js';

/** The pull subscription on the dead-letter topic (infra/topology.yaml). */
function auditSubscription(): string {
  const audit = loadTopology().subscriptions.find((s) => s.topic === TOPICS.deadLetters && !s.push);
  if (!audit) throw new Error(`infra/topology.yaml has no pull subscription on ${TOPICS.deadLetters}`);
  return audit.name;
}

export interface DeadLetter {
  /** The subscription that gave up on it. */
  subscription: string;
  deliveries: number;
  /** When it was first published. */
  publishedAt: string;
  /** The message's JSON body (a request names its proxy in `metadata.name`). */
  body: unknown;
}

interface PulledMessage {
  ackId: string;
  message: { data?: string; attributes?: Record<string, string> };
}

/**
 * Pulls (and acknowledges) every message on the audit subscription, page after page until the
 * emulator returns none.
 *
 * @param pubsubHost - the emulator's `HOST:PORT`
 */
export async function drainDeadLetters(pubsubHost: string, project: string): Promise<DeadLetter[]> {
  const audit = auditSubscription();
  const base = `http://${pubsubHost}/v1/projects/${project}/subscriptions/${audit}`;
  const call = async (verb: 'pull' | 'acknowledge', body: unknown): Promise<unknown> => {
    const res = await fetch(`${base}:${verb}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${verb} on ${audit}: HTTP ${res.status} ${await res.text()}`);
    return res.json();
  };
  const letters: DeadLetter[] = [];
  for (;;) {
    const { receivedMessages = [] } = (await call('pull', { maxMessages: 1000, returnImmediately: true })) as {
      receivedMessages?: PulledMessage[];
    };
    if (receivedMessages.length === 0) return letters;
    for (const { message } of receivedMessages) {
      const a = message.attributes ?? {};
      let body: unknown = null;
      try {
        body = JSON.parse(Buffer.from(message.data ?? '', 'base64').toString('utf8'));
      } catch {
        body = message.data ?? null;
      }
      letters.push({
        subscription: a['CloudPubSubDeadLetterSourceSubscription'] ?? '?',
        deliveries: Number(a['CloudPubSubDeadLetterSourceDeliveryCount'] ?? 0),
        publishedAt: a['CloudPubSubDeadLetterSourceTopicPublishTime'] ?? '?',
        body,
      });
    }
    await call('acknowledge', { ackIds: receivedMessages.map((m) => m.ackId) });
  }
}
