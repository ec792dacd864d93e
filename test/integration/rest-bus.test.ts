/** The functions' REST bus against the real Pub/Sub emulator: batching, ids, exact signed bytes, errors. */
import { PubSub, type Message } from '@google-cloud/pubsub';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRestBus } from '../../shared/bus/rest.js';
import { parseRelayKeys, generateRelayKeys, signer, verifySignature } from '../../shared/wire/signature.js';
import { eventually } from '../support/eventually.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('restbus');
const pubsub = new PubSub({ projectId: emu.projectId });
const bus = createRestBus({ project: emu.projectId, emulatorHost: emu.pubsubHost });
const received: Message[] = [];
const keys = parseRelayKeys(generateRelayKeys(['onprem'])).get('onprem') ?? [];

beforeAll(async () => {
  await pubsub.createTopic('cmds');
  const [sub] = await pubsub.topic('cmds').createSubscription('cmds-sub');
  sub.on('message', (m: Message) => {
    received.push(m);
    m.ack();
  });
});
afterAll(() => pubsub.close());

it('publishes concurrent messages (one batch) with their ids, attributes and a signature over the bytes it sent', async () => {
  const key = keys[0];
  if (!key) throw new Error('no generated key');
  const bodies = Array.from({ length: 150 }, (_, i) => ({ kind: 'delete', name: `p-${i}`, note: 'é ✓' }));
  const ids = await Promise.all(
    bodies.map((b) => bus.publish('cmds', b, { relay: 'onprem', kind: b.kind }, signer(key, 'command'))),
  );
  expect(new Set(ids).size).toBe(150);
  await eventually(() => expect(received).toHaveLength(150));
  for (const m of received) {
    const text = m.data.toString('utf8');
    expect(ids).toContain(m.id);
    expect(m.attributes['relay']).toBe('onprem');
    expect(verifySignature(keys, 'command', m.attributes, text)).toBeUndefined();
    expect(bodies).toContainEqual(JSON.parse(text));
  }
});

it('fails naming the topic and the HTTP status when the topic does not exist', async () => {
  await expect(bus.publish('no-such-topic', { a: 1 })).rejects.toThrow(/publish to no-such-topic: HTTP 404/);
});
