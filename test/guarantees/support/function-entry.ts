/**
 * The functions as the framework runs them: the real `functions/<name>/index.ts` modules, loaded
 * into this process with the emulators' environment, invoked through what they registered.
 */
import { randomUUID } from 'node:crypto';
import { PubSub, type Message } from '@google-cloud/pubsub';
import { getFunction } from '@google-cloud/functions-framework/testing';
import type { CloudEventLike } from '../../../shared/telemetry/invocation.js';
import type { EmulatorEnv } from '../../support/emulator-env.js';
import { eventually } from '../../support/eventually.js';

/**
 * Points this process's runtime at the emulators (the functions build it from `process.env` on
 * their first call), then loads the named functions' modules.
 *
 * @param extra - more environment (`EGRESS_API_TOKENS`, `EGRESS_CONFIG`)
 */
export async function loadFunctions(
  emu: EmulatorEnv,
  names: (keyof typeof MODULES)[],
  extra: Record<string, string> = {},
): Promise<void> {
  Object.assign(process.env, emu.env, extra);
  for (const name of names) await MODULES[name]();
}

const MODULES = {
  requests: () => import('../../../functions/requests/index.js'),
  'relay-report': () => import('../../../functions/relay-report/index.js'),
  api: () => import('../../../functions/api/index.js'),
};

/** The CloudEvent handler a Pub/Sub-triggered function registered. */
export function pubSubFunction(name: string): (event: CloudEventLike) => Promise<void> {
  const fn = getFunction(name);
  if (!fn) throw new Error(`function ${name} is not registered`);
  return fn as (event: CloudEventLike) => Promise<void>;
}

let sequence = 0;

/**
 * A CloudEvent as Pub/Sub push delivers it (`messagePublished`), with `data` already base64 (so a
 * test can send base64 that is not).
 */
export function cloudEvent(
  topic: string,
  base64: string,
  attributes: Record<string, string> = {},
  messageId = `fz-${++sequence}`,
): CloudEventLike & { messageId: string } {
  return {
    messageId,
    id: messageId,
    source: `//pubsub.googleapis.com/projects/fuzz/topics/${topic}`,
    type: 'google.cloud.pubsub.topic.v1.messagePublished',
    time: new Date().toISOString(),
    data: {
      message: { data: base64, attributes, messageId, publishTime: new Date().toISOString() },
      subscription: `projects/fuzz/subscriptions/${topic}-fn`,
    },
  };
}

/** The base64 of a text, as a publisher would send it. */
export const base64 = (text: string) => Buffer.from(text, 'utf8').toString('base64');

/**
 * Collects every message published on `topic` from now on (a subscription of its own).
 * `settled()` publishes a marker and resolves once it has come back (at most 10 s, then it throws
 * saying so): what was published before it has had the time to arrive; markers are not kept.
 */
export async function recordTopic(
  pubsub: PubSub,
  topic: string,
): Promise<{ messages: Message[]; settled(): Promise<void>; close(): Promise<void> }> {
  const [exists] = await pubsub.topic(topic).exists();
  if (!exists) await pubsub.createTopic(topic);
  const [sub] = await pubsub.createSubscription(topic, `${topic}-recorder-${Date.now().toString(36)}`);
  const messages: Message[] = [];
  const markers = new Set<string>();
  sub.on('message', (m: Message) => {
    m.ack();
    const marker = m.attributes['recorderMarker'];
    if (marker === undefined) messages.push(m);
    else markers.add(marker);
  });
  const settled = async () => {
    const marker = randomUUID();
    await pubsub.topic(topic).publishMessage({ data: Buffer.from('{}'), attributes: { recorderMarker: marker } });
    await eventually(
      () => {
        if (!markers.has(marker)) throw new Error(`the marker ${marker} published on ${topic} never came back`);
      },
      10_000,
      20,
    );
  };
  return { messages, settled, close: () => sub.close() };
}

/**
 * Takes the functions' log lines (JSON on stdout) for the test, leaving other output alone.
 *
 * @returns the lines captured so far (the array fills as they come) and the restore function
 */
export function captureLogs(): { lines: string[]; restore(): void } {
  const lines: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = (chunk: string | Uint8Array, ...rest: never[]) => {
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8');
    if (!text.startsWith('{"severity"')) return write(chunk, ...rest);
    lines.push(...text.split('\n').filter(Boolean));
    return true;
  };
  return { lines, restore: () => void (process.stdout.write = write) };
}
