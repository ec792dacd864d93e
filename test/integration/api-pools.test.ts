/** The API's pool routes (docs/api.md) on the real emulators: validation naming the field, publishing, views, members refused. */
import { PubSub, type Message } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../shared/api/deps.js';
import { createPubSubBus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import { createLogger } from '../../shared/logger.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestorePoolRepository } from '../../shared/store/firestore/pools.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import { callApi } from '../support/api-call.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { eventually } from '../support/eventually.js';

const TOKEN = 'test-token-0123456789abcdef';
const emu = emulatorEnv('api-pools');
const db = createFirestore(emu.projectId);
const logger = createLogger({ write: () => undefined });
const pubsub = new PubSub({ projectId: emu.projectId });
const published: Message[] = [];
const pools = new FirestorePoolRepository(db, logger);
let deps: ApiDeps;

const call = (method: string, target: string, body?: unknown) => callApi(deps, method, target, body, TOKEN);
const pool = (spec: Record<string, unknown> = {}) => ({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  metadata: { labels: {} },
  spec: {
    replicas: 2,
    minAvailable: 1,
    template: { spec: { provider: 'local' } },
    spread: [{ provider: 'local' }, { provider: 'local-b' }],
    ...spec,
  },
});

beforeAll(async () => {
  await pubsub.createTopic('proxy-requests');
  const [sub] = await pubsub.createSubscription('proxy-requests', 'api-pools-test');
  sub.on('message', (m: Message) => {
    published.push(m);
    m.ack();
  });
  const config = parseConfig({
    installationId: 'it',
    echoUrl: 'http://127.0.0.1:9/',
    apiTokens: [TOKEN],
    providers: [
      { name: 'local', type: 'process', relay: 'r1' },
      { name: 'local-b', type: 'process', relay: 'r1' },
    ],
  });
  deps = {
    config,
    proxies: new FirestoreProxyRepository(db, logger),
    relays: new FirestoreRelayRepository(db, logger),
    reports: new FirestoreReportRepository(db, logger),
    providerStatus: new FirestoreProviderStatusRepository(db),
    pools,
    bus: createPubSubBus(pubsub),
    logger,
  };
});
afterAll(() => pubsub.close());

describe('api: pools', () => {
  it('PUT publishes a ProxyPool apply (202)', async () => {
    expect(await call('PUT', '/v1/pools/crawl', pool())).toMatchObject({ status: 202, body: { name: 'crawl' } });
    await eventually(() =>
      expect(published.map((m) => JSON.parse(m.data.toString()) as { kind: string; action: string })).toContainEqual(
        expect.objectContaining({ kind: 'ProxyPool', action: 'apply' }),
      ),
    );
  });

  it.each([
    [pool({ minAvailable: 3 }), 'spec.minAvailable'],
    [pool({ spread: [{ provider: 'nope' }] }), 'spec.spread.0.provider'],
    [pool({ template: { spec: { provider: 'local', port: 'x' } } }), 'spec.template.spec.port'],
    [{ ...pool(), metadata: { name: 'other' } }, 'metadata.name'],
    [{ ...pool(), action: 'apply' }, 'action'],
  ])('a bad pool is 400 naming the field (%#)', async (body, field) => {
    expect(await call('PUT', '/v1/pools/crawl', body)).toMatchObject({ status: 400, body: { error: { field } } });
  });

  it('GET lists pools and shows one with members and events; members are refused as proxies (409)', async () => {
    const now = Date.now();
    await pools.apply(
      {
        apiVersion: 'egress.dev/v1',
        kind: 'ProxyPool',
        action: 'apply',
        metadata: { name: 'seeded', labels: {} },
        spec: {
          replicas: 1,
          maxSurge: 1,
          template: { metadata: { labels: {} }, spec: { provider: 'local', placement: {}, port: 0 } },
        },
      },
      now,
      now,
    );
    const { created } = await pools.reconcile(
      'seeded',
      () => now,
      (doc) => ({
        writes: { create: doc ? [{ spec: { provider: 'local', placement: {}, port: 0 }, labels: {} }] : [], drain: [] },
        result: undefined,
      }),
    );
    const member = created[0] ?? '';
    expect(member).toMatch(/^seeded-[a-z0-9]{5}$/);
    const list = await call('GET', '/v1/pools');
    expect(list).toMatchObject({ status: 200, body: { items: [expect.objectContaining({ kind: 'ProxyPool' })] } });
    const one = await call('GET', '/v1/pools/seeded');
    expect(one).toMatchObject({
      status: 200,
      body: { metadata: { name: 'seeded' }, members: [{ name: member, provider: 'local', entry: 0 }], events: [] },
    });
    for (const method of ['PUT', 'DELETE']) {
      const refused = await call(method, `/v1/proxies/${member}`, {
        apiVersion: 'egress.dev/v1',
        kind: 'Proxy',
        spec: { provider: 'local' },
      });
      expect(refused).toMatchObject({ status: 409, body: { error: { field: 'metadata.name' } } });
      expect(JSON.stringify(refused.body)).toContain('pool \\"seeded\\"');
    }
    const labelled = await call('PUT', '/v1/proxies/fake', {
      apiVersion: 'egress.dev/v1',
      kind: 'Proxy',
      metadata: { labels: { 'egress.dev/pool': 'seeded' } },
      spec: { provider: 'local' },
    });
    expect(labelled).toMatchObject({ status: 400, body: { error: { field: 'metadata.labels.egress.dev/pool' } } });
  });

  it('DELETE publishes a delete (202), 404 for an unknown pool', async () => {
    expect(await call('DELETE', '/v1/pools/seeded')).toMatchObject({ status: 202 });
    expect(await call('DELETE', '/v1/pools/absent')).toMatchObject({ status: 404 });
    expect(await call('GET', '/v1/pools/absent')).toMatchObject({ status: 404 });
  });
});
