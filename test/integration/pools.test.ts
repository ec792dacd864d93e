/**
 * Pools on the emulators with a real relay running two `process` providers: requests through the
 * request handler (redelivered and reordered), spread 3 + 3, scale down and back, a provider made
 * unhealthy (its share moves, and comes back after the recovery delay), members refused as
 * direct requests, and delete.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBody } from '../../shared/bus/message.js';
import type { PoolApplyRequest } from '../../shared/domain/pool.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import { handleRequest, type RequestDeps } from '../../shared/requests.js';
import type { FirestorePoolRepository } from '../../shared/store/firestore/pools.js';
import { eventually } from '../support/eventually.js';
import { drivePool, poolCheckDeps, readyMembers, type PoolDriver } from '../support/pool-driver.js';
import { proxyPorts, startRelayHarness, type RelayHarness } from '../support/relay-harness.js';
import { applyRequest } from '../support/reconcile-steps.js';

let h: RelayHarness;
let deps: CheckDeps & { pools: FirestorePoolRepository };
let requests: RequestDeps;
let driver: PoolDriver | undefined;
let published = Date.now();

const pool = (replicas: number, action: 'apply' | 'delete' = 'apply'): PoolApplyRequest | Record<string, unknown> =>
  action === 'delete'
    ? { apiVersion: 'egress.dev/v1', kind: 'ProxyPool', action, metadata: { name: 'crawl' } }
    : {
        apiVersion: 'egress.dev/v1',
        kind: 'ProxyPool',
        action,
        metadata: { name: 'crawl', labels: {} },
        spec: {
          replicas,
          minAvailable: Math.max(0, replicas - 1),
          maxSurge: 1,
          template: { metadata: { labels: { team: 'crawl' } }, spec: { provider: 'proc', placement: {}, port: 0 } },
          spread: [
            { provider: 'proc', placement: {} },
            { provider: 'proc-b', placement: {} },
          ],
        },
      };

/** Delivers a request as the requests function would get it, `copies` times. */
async function send(body: unknown, copies = 1, publishTime = (published += 1000)) {
  const outcomes = [];
  for (let i = 0; i < copies; i++) {
    const message = decodeBody(`m-${publishTime}-${i}`, publishTime, {}, JSON.stringify(body));
    outcomes.push(await handleRequest(requests, message));
  }
  return outcomes;
}

/** Live members per provider, and how many are Ready. */
async function spread() {
  const live = (await deps.pools.members('crawl')).filter((m) => !m.deletionRequestedAt);
  const by = (p: string) => live.filter((m) => m.spec.provider === p).length;
  return {
    proc: by('proc'),
    procB: by('proc-b'),
    ready: readyMembers(live),
    all: (await deps.pools.members('crawl')).length,
  };
}

const converge = (want: Awaited<ReturnType<typeof spread>>, ms = 60_000) =>
  eventually(async () => expect(await spread()).toEqual(want), ms, 500);

beforeAll(async () => {
  // 10 proxies a provider (proxyPorts: two ports each, tinyproxy and its TLS listener) hold the 7
  // members (6 and a surge) one provider runs while the other is down.
  h = await startRelayHarness(
    'pools',
    proxyPorts(24400, 20),
    {
      poolRecoverSeconds: 3,
      healthIntervalSeconds: 60,
      providers: [
        { name: 'proc', type: 'process', relay: 'pools', options: { heartbeatTimeoutSeconds: 30 } },
        { name: 'proc-b', type: 'process', relay: 'pools', options: { heartbeatTimeoutSeconds: 30 } },
      ],
    },
    {
      backends: (stateDir) => [
        {
          provider: 'proc',
          type: 'process',
          stateDir: join(stateDir, 'a'),
          bindAddresses: ['127.0.0.1'],
          portRange: proxyPorts(24400, 10),
        },
        {
          provider: 'proc-b',
          type: 'process',
          stateDir: join(stateDir, 'b'),
          bindAddresses: ['127.0.0.1'],
          portRange: proxyPorts(24420, 10),
        },
      ],
    },
  );
  deps = poolCheckDeps(h);
  requests = { proxies: h.proxies, bus: h.bus, logger: h.logger, maxEvents: 50, pools: deps.pools, config: h.config };
  driver = drivePool(deps, 'crawl');
}, 60_000);
afterAll(async () => {
  await driver?.stop();
  await h?.close();
}, 60_000);

describe('pools', () => {
  it('a pool of 6 over two providers comes up 3 + 3, a duplicated apply changing nothing', async () => {
    expect(await send(pool(6), 2)).toEqual(['created', 'unchanged']);
    await converge({ proc: 3, procB: 3, ready: 6, all: 6 });
    // The pool's status follows its members by one reconcile.
    await eventually(
      async () => {
        const doc = await deps.pools.get('crawl');
        expect(doc?.status.entries.map((e) => [e.provider, e.desired, e.ready])).toEqual([
          ['proc', 3, 3],
          ['proc-b', 3, 3],
        ]);
        expect(doc?.status.conditions.find((c) => c.type === 'Available')?.status).toBe('True');
      },
      20_000,
      500,
    );
  }, 90_000);

  it('refuses a request naming a member, naming the pool; a spread entry must be a configured provider', async () => {
    const member = (await deps.pools.members('crawl'))[0]?.metadata.name ?? '';
    const t = (published += 1000);
    const outcome = await handleRequest(
      requests,
      decodeBody(`direct-${t}`, t, {}, JSON.stringify(applyRequest(member, 'proc'))),
    );
    expect(outcome).toBe('rejected');
    const rejection = (await h.db.collection('rejections').doc(`direct-${t}`).get()).data();
    expect(rejection).toMatchObject({ field: 'metadata.name' });
    expect(String(rejection?.['reason'])).toContain('member of pool "crawl"');
    const bad = { ...pool(2), metadata: { name: 'other', labels: {} } } as PoolApplyRequest;
    bad.spec.spread = [{ provider: 'nope', placement: {} }];
    expect(await send(bad)).toContain('rejected');
  });

  it('scales to 2 (one per provider) and back to 6; a reordered older scale is stale', async () => {
    const newer = (published += 1000);
    const older = newer - 500;
    expect((await send(pool(2), 1, newer))[0]).toBe('updated');
    expect((await send(pool(4), 1, older))[0]).toBe('stale');
    await converge({ proc: 1, procB: 1, ready: 2, all: 2 });
    await send(pool(6));
    await converge({ proc: 3, procB: 3, ready: 6, all: 6 });
  }, 120_000);

  it('a provider made unhealthy has its members moved, and they come back when it recovers', async () => {
    const verdict = (status: 'Healthy' | 'Unhealthy') =>
      h.providerStatus.write({
        name: 'proc-b',
        type: 'process',
        status,
        message: status === 'Healthy' ? 'ok' : 'relay lost',
        latencyMs: 1,
        lastCheckAt: new Date().toISOString(),
      });
    await verdict('Unhealthy');
    const writer = setInterval(() => void verdict('Unhealthy'), 2000);
    try {
      // Drained members on the down provider wait in Deleting until it answers again.
      await converge({ proc: 6, procB: 0, ready: 6, all: 9 }, 90_000);
      await eventually(
        async () => {
          const doc = await deps.pools.get('crawl');
          expect(doc?.status.entries[1]).toMatchObject({ available: false, reason: 'ProviderUnhealthy', desired: 0 });
          expect(doc?.status.conditions.find((c) => c.type === 'Degraded')?.status).toBe('True');
        },
        20_000,
        500,
      );
    } finally {
      clearInterval(writer);
      // Healthy again even when the case failed: the next case's drained members need proc-b to delete them.
      await verdict('Healthy');
    }
    await converge({ proc: 3, procB: 3, ready: 6, all: 6 }, 90_000);
    const reasons = (await deps.pools.events('crawl', 50)).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['EntryUnavailable', 'EntryRecovered', 'MemberDrained']));
  }, 200_000);

  it('scale to 0 keeps the pool; delete removes the pool and every member, a redelivered delete changing nothing', async () => {
    await send(pool(0));
    await converge({ proc: 0, procB: 0, ready: 0, all: 0 });
    expect(await deps.pools.get('crawl')).toBeDefined();
    await send(pool(3));
    await eventually(async () => expect((await spread()).ready).toBe(3), 60_000, 500);
    const outcomes = await send(pool(0, 'delete'), 2);
    expect(outcomes).toEqual(['marked', 'already']);
    await eventually(
      async () => {
        expect(await deps.pools.members('crawl')).toEqual([]);
        expect(await deps.pools.get('crawl')).toBeUndefined();
      },
      60_000,
      500,
    );
    // A late apply published before the delete does not bring it back.
    expect((await send(pool(3), 1, published - 1500))[0]).toBe('stale');
  }, 150_000);
});
