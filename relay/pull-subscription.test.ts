/**
 * The relay's pull subscription leases what it holds: a message it received is leased for
 * LEASE_SECONDS at once and again until it is settled, so the subscription's own ack deadline can
 * be short (a command answered to a pull the relay never saw comes back within it; issue 19).
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

/** A subscriber API that answers the first pull with `ackIds` and then waits until cancelled. */
function fakeSubscriber(ackIds: string[]) {
  const calls: { op: 'ack' | 'modack'; ackIds: string[]; seconds?: number }[] = [];
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
    return Promise.resolve([{}]);
  };
  const client = {
    pull,
    acknowledge: record('ack'),
    modifyAckDeadline: record('modack'),
    close: () => Promise.resolve(),
  } as unknown as SubscriberApi;
  return { client, calls };
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
  expect(calls.slice(afterA).every((x) => !x.ackIds.includes('a'))).toBe(true);
  expect(calls.slice(afterB).every((x) => !x.ackIds.includes('b'))).toBe(true);
  expect(calls.filter((x) => x.op === 'ack')).toEqual([
    { op: 'ack', ackIds: ['a'] },
    { op: 'ack', ackIds: ['c'] },
  ]);
  expect(calls.filter((x) => x.op === 'modack' && x.seconds === 0)).toEqual([
    { op: 'modack', ackIds: ['b'], seconds: 0 },
  ]);
});
