/**
 * A command lost on its way to the relay, against the real Pub/Sub emulator: the emulator answers
 * a relay's long poll with a command, but the relay's thread is not scheduled until after the
 * pull's 10 s deadline (a loaded machine), so the client gives up on the pull and never reads the
 * answer (simulated exactly: the answer is read and dropped, the call fails as a passed deadline).
 * Pub/Sub counts the command as delivered: it comes back only when its ack deadline runs out. With
 * the relay subscription of infra/topology.yaml that is 20 s, well short of the create's resend and
 * of an e2e test's whole wait (120 s would pass both); a command the relay does hold is leased for
 * longer until it settles.
 */
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { applyTopology } from '../../infra/local/apply-topology.js';
import { loadTopology, localPushEndpoint } from '../../infra/local/topology.js';
import type { CommandMessage } from '../../relay/command-subscription.js';
import { createPullSubscription, subscriberApi, type SubscriberApi } from '../../relay/pull-subscription.js';
import { eventually } from '../support/eventually.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('lostpull');
const pubsub = new PubSub({ projectId: emu.projectId });
const topology = loadTopology();

beforeAll(async () => {
  await applyTopology(pubsub, topology, {
    pushEndpoint: (_fn, topic) => localPushEndpoint('http://127.0.0.1:9', emu.projectId, topic),
    relays: ['lost', 'held'],
  });
});
afterAll(() => pubsub.close());

/**
 * The emulator's subscriber client, except that the first pull answered with messages is given up
 * on as a pull whose deadline passed before its answer was read (what a relay not scheduled in time
 * does): the answer is dropped and the call fails with DEADLINE_EXCEEDED.
 */
function givingUpOnce(): { client: SubscriberApi; dropped: () => number } {
  const real = subscriberApi(pubsub);
  let dropped = 0;
  const pull: SubscriberApi['pull'] = (request, options) => {
    const call = real.pull(request, options);
    const answer = call.then((answer) => {
      if (dropped === 0 && (answer[0].receivedMessages?.length ?? 0) > 0) {
        dropped++;
        throw Object.assign(new Error('4 DEADLINE_EXCEEDED: Deadline exceeded'), { code: 4 });
      }
      return answer;
    });
    return Object.assign(answer, { cancel: () => call.cancel() });
  };
  return { client: { ...real, pull }, dropped: () => dropped };
}

it('a command answered to a pull the relay gave up on is delivered again within the short ack deadline', async () => {
  const { client, dropped } = givingUpOnce();
  const sub = createPullSubscription(pubsub, 'relay-commands-lost', 8, { client });
  const got: CommandMessage[] = [];
  sub.on('message', (m) => {
    if (m.attributes['relay'] !== 'lost') return m.ack();
    got.push(m);
    m.ack();
  });
  const published = Date.now();
  await pubsub.topic('relay-commands').publishMessage({ data: Buffer.from('{}'), attributes: { relay: 'lost' } });
  // With the old 120 s ack deadline it came back only after the e2e test's whole wait.
  await eventually(() => expect(got).toHaveLength(1), 45_000, 100);
  const late = Date.now() - published;
  await sub.close();
  expect(dropped()).toBe(1);
  // It came back, not at once: after the subscription's ack deadline (less the emulator's rounding).
  expect(late).toBeGreaterThan((topology.relaySubscription.ackDeadlineSeconds - 5) * 1000);
}, 90_000);

it('a command held longer than the ack deadline is not delivered again while the relay handles it', async () => {
  const sub = createPullSubscription(pubsub, 'relay-commands-held', 8);
  const got: CommandMessage[] = [];
  // The emulator does not enforce subscription filters: the other test's command is here too.
  sub.on('message', (m) => (m.attributes['relay'] === 'held' ? got.push(m) : m.ack()));
  await pubsub.topic('relay-commands').publishMessage({ data: Buffer.from('{}'), attributes: { relay: 'held' } });
  await eventually(() => expect(got).toHaveLength(1), 10_000, 50);
  const deadline = (topology.relaySubscription.ackDeadlineSeconds + 10) * 1000;
  // A slow command (a kvm guest), held past the subscription's ack deadline plus its backoff; what
  // is tested is that nothing arrives in that time, so the test waits it out.
  await new Promise((resolve) => setTimeout(resolve, deadline));
  expect(got).toHaveLength(1);
  got[0]?.ack();
  await sub.close();
}, 60_000);
