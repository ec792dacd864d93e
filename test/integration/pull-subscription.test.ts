/** The relay's synchronous-pull command subscription against the real Pub/Sub emulator. */
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { CommandMessage } from '../../relay/command-subscription.js';
import { createPullSubscription } from '../../relay/pull-subscription.js';
import { eventually } from '../support/eventually.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('pull');
const pubsub = new PubSub({ projectId: emu.projectId });
beforeAll(async () => {
  await pubsub.createTopic('cmds');
  await pubsub.createSubscription('cmds', 'cmds-sub', { ackDeadlineSeconds: 30 });
});
afterAll(() => pubsub.close());

it('delivers, redelivers a nacked message, never more than maxInFlight at once, and closes', async () => {
  const sub = createPullSubscription(pubsub, 'cmds-sub', 2);
  const got: CommandMessage[] = [];
  sub.on('message', (m) => got.push(m));
  const ids = await Promise.all(
    ['a', 'b', 'c'].map((d) =>
      pubsub.topic('cmds').publishMessage({ data: Buffer.from(d), attributes: { relay: 'x' } }),
    ),
  );
  await eventually(() => expect(got.length).toBe(2));
  expect(got.every((m) => m.attributes['relay'] === 'x' && m.publishTime.getTime() > 0)).toBe(true);
  got[0]?.ack();
  got[1]?.nack();
  await eventually(() => expect(got.length).toBe(4));
  for (const m of got.slice(2)) m.ack();
  const seen = got.map((m) => m.data.toString());
  expect(seen.filter((d) => d === got[1]?.data.toString())).toHaveLength(2);
  expect(new Set(got.map((m) => m.id))).toEqual(new Set(ids));
  await sub.close();
});

it('close ends a long poll that is waiting at once, instead of waiting out its 10 s', async () => {
  const sub = createPullSubscription(pubsub, 'cmds-sub', 2);
  const got: CommandMessage[] = [];
  sub.on('message', (m) => got.push(m));
  await pubsub.topic('cmds').publishMessage({ data: Buffer.from('d') });
  await eventually(() => expect(got).toHaveLength(1));
  got[0]?.ack();
  // The loop pulled again as it handed the message out: that pull now waits on the emulator.
  const started = Date.now();
  await sub.close();
  expect(Date.now() - started).toBeLessThan(2000);
});
