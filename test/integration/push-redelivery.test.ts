/**
 * A push refused while a function is down (as when the local stack starts a killed function again)
 * is pushed again once it answers: the topology as the launcher applies it to the real Pub/Sub
 * emulator. Under the declared retry policy the emulator stops pushing a dozen refused messages
 * (see `omitPushRetryPolicy` in infra/local/apply-topology.ts; with it set false this test fails:
 * 3 of 12 never pushed again in 30 s); without it, it keeps trying.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, describe, expect, it } from 'vitest';
import { applyTopology } from '../../infra/local/apply-topology.js';
import { loadTopology, localPushEndpoint } from '../../infra/local/topology.js';
import { TOPICS } from '../../shared/bus/topics.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { eventually } from '../support/eventually.js';

const emu = emulatorEnv('redeliver');
const pubsub = new PubSub({ projectId: emu.projectId, apiEndpoint: emu.pubsubHost });
const MESSAGES = 12;

/** A push endpoint that refuses (503) until `up`, then takes each message; counts both by message. */
function endpoint(): { server: Server; refused: Map<string, number>; taken: Set<string>; up(): void } {
  const refused = new Map<string, number>();
  const taken = new Set<string>();
  let up = false;
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const n =
        (JSON.parse(body) as { message: { attributes?: Record<string, string> } }).message.attributes?.['n'] ?? '?';
      if (!up) refused.set(n, (refused.get(n) ?? 0) + 1);
      else taken.add(n);
      res.statusCode = up ? 204 : 503;
      res.end();
    });
  });
  return { server, refused, taken, up: () => void (up = true) };
}

afterAll(async () => {
  await pubsub.close();
});

describe('a push refused while the function is down', () => {
  it('reaches the function once it answers again, every one of a dozen', async () => {
    const target = endpoint();
    await new Promise<void>((resolve) => target.server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(target.server.address() as AddressInfo).port}`;
      await applyTopology(pubsub, loadTopology(), {
        pushEndpoint: (_fn, topic) => localPushEndpoint(url, emu.projectId, topic),
        relays: [],
        omitPushRetryPolicy: true,
      });
      const topic = pubsub.topic(TOPICS.proxyRequests);
      for (let i = 0; i < MESSAGES; i++) await topic.publishMessage({ json: {}, attributes: { n: String(i) } });
      // Every message refused twice: the emulator has taken the refusals and is retrying.
      await eventually(
        () => {
          if (target.refused.size < MESSAGES || [...target.refused.values()].some((c) => c < 2))
            throw new Error(`not every message refused twice: ${JSON.stringify(Object.fromEntries(target.refused))}`);
        },
        30_000,
        100,
      );
      target.up();
      await eventually(
        () => {
          if (target.taken.size < MESSAGES)
            throw new Error(`not all ${MESSAGES} pushed again: taken ${[...target.taken].sort().join(', ') || 'none'}`);
        },
        30_000,
        100,
      );
      expect(target.taken.size).toBe(MESSAGES);
    } finally {
      await new Promise((resolve) => target.server.close(resolve));
    }
  }, 70_000);
});
