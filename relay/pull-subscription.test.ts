/**
 * The relay's pull subscription leases what it holds: a message it received is leased for
 * LEASE_SECONDS at once and again until it is settled, so the subscription's own ack deadline can
 * be short (a command answered to a pull the relay never saw comes back within it:
 * test/integration/relay-lost-pull.test.ts).
 */
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, expect, it } from 'vitest';
import { eventually } from '../test/support/eventually.js';
import type { CommandMessage } from './command-subscription.js';
import { createPullSubscription, LEASE_SECONDS, type SubscriberApi } from './pull-subscription.js';

const pubsub = new PubSub({ projectId: 'pull-test' });
afterAll(() => pubsub.close());

interface Request {
  ackIds?: string[] | null;
  ackDeadlineSeconds?: number | null;
}

/**
 * A subscriber API that answers the first pull with `ackIds` and then waits until cancelled; with
 * `holdLeases`, lease requests (a deadline above 0) are answered only when `answerLeases` is called.
 */
function fakeSubscriber(ackIds: string[], holdLeases = false) {
  const calls: { op: 'ack' | 'modack'; ackIds: string[]; seconds?: number }[] = [];
  const heldLeases: (() => void)[] = [];
  let served = false;
  const pull = () => {
    let cancel = () => undefined as void;
    const answer = served
      ? new Promise((_, reject) => (cancel = () => reject(Object.assign(new Error('cancelled'), { code: 1 }))))
      : Promise.resolve([
          {
            receivedMessages: ackIds.map((ackId) => ({
              ackId,
              message: { messageId: ackId, data: Buffer.from('{}') },
            })),
          },
        ]);
    served = true;
    return Object.assign(answer, { cancel: () => cancel() });
  };
  const record = (op: 'ack' | 'modack') => (request: Request) => {
    calls.push({
      op,
      ackIds: request.ackIds ?? [],
      ...(op === 'modack' ? { seconds: request.ackDeadlineSeconds ?? 0 } : {}),
    });
    if (holdLeases && op === 'modack' && (request.ackDeadlineSeconds ?? 0) > 0)
      return new Promise((resolve) => heldLeases.push(() => resolve([{}])));
    return Promise.resolve([{}]);
  };
  const client = {
    pull,
    acknowledge: record('ack'),
    modifyAckDeadline: record('modack'),
    close: () => Promise.resolve(),
  } as unknown as SubscriberApi;
  const answerLeases = () => heldLeases.splice(0).forEach((answer) => answer());
  return { client, calls, answerLeases };
}

it('leases a received message at once and again while it is held, and never after it is settled', async () => {
  const { client, calls } = fakeSubscriber(['a', 'b', 'c']);
  const sub = createPullSubscription(pubsub, 'relay-commands-x', 8, { client, renewEveryMs: 20 });
  const got: CommandMessage[] = [];
  sub.on('message', (m) => got.push(m));
  await eventually(() => expect(got).toHaveLength(3));
  expect(calls[0]).toEqual({ op: 'modack', ackIds: ['a', 'b', 'c'], seconds: LEASE_SECONDS });
  const [a, b, c] = got;
  a?.ack();
  const afterA = calls.length;
  const renewals = (ids: string) => calls.filter((x) => x.op === 'modack' && x.ackIds.join() === ids);
  await eventually(() => expect(renewals('b,c').length).toBeGreaterThanOrEqual(2), 2000, 10);
  b?.nack();
  // Settled once: the ack after the nack is not sent.
  b?.ack();
  const afterB = calls.length;
  await eventually(() => expect(renewals('c').length).toBeGreaterThanOrEqual(2), 2000, 10);
  c?.ack();
  await sub.close();
  const leasesOf = (id: string, from: number) =>
    calls.slice(from).filter((x) => x.op === 'modack' && x.seconds === LEASE_SECONDS && x.ackIds.includes(id));
  expect(leasesOf('a', afterA)).toEqual([]);
  expect(leasesOf('b', afterB)).toEqual([]);
  expect(calls.filter((x) => x.op === 'ack')).toEqual([
    { op: 'ack', ackIds: ['a'] },
    { op: 'ack', ackIds: ['c'] },
  ]);
  expect(calls.filter((x) => x.op === 'modack' && x.seconds === 0)).toEqual([
    { op: 'modack', ackIds: ['b'], seconds: 0 },
  ]);
});

it("sends a nack only once the message's lease is answered (Pub/Sub does not order separate requests)", async () => {
  const { client, calls, answerLeases } = fakeSubscriber(['a'], true);
  const sub = createPullSubscription(pubsub, 'relay-commands-x', 8, { client, renewEveryMs: 60_000 });
  const got: CommandMessage[] = [];
  sub.on('message', (m) => got.push(m));
  await eventually(() => expect(got).toHaveLength(1));
  got[0]?.nack();
  await new Promise((resolve) => setImmediate(resolve));
  expect(calls.filter((x) => x.seconds === 0)).toEqual([]);
  answerLeases();
  await eventually(() =>
    expect(calls.filter((x) => x.seconds === 0)).toEqual([{ op: 'modack', ackIds: ['a'], seconds: 0 }]),
  );
  await sub.close();
});

it('close hands back what is still held (deadline 0) instead of leaving it leased, and a later ack is not sent', async () => {
  const { client, calls } = fakeSubscriber(['a', 'b']);
  const sub = createPullSubscription(pubsub, 'relay-commands-x', 8, { client, renewEveryMs: 60_000 });
  const got: CommandMessage[] = [];
  sub.on('message', (m) => got.push(m));
  await eventually(() => expect(got).toHaveLength(2));
  got[0]?.ack();
  await sub.close();
  got[1]?.ack();
  await new Promise((resolve) => setImmediate(resolve));
  expect(calls.filter((x) => x.op === 'ack')).toEqual([{ op: 'ack', ackIds: ['a'] }]);
  expect(calls.filter((x) => x.seconds === 0)).toEqual([{ op: 'modack', ackIds: ['b'], seconds: 0 }]);
});
