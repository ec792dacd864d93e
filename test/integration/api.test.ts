/** The API's routes (docs/api.md) on the real emulators: auth, validation, publishing, discovery. */
import { PubSub, type Message } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../shared/api/deps.js';
import { createPubSubBus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import type { ProxyStatus } from '../../shared/domain/status.js';
import { createLogger } from '../../shared/logger.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import { callApi } from '../support/api-call.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { eventually } from '../support/eventually.js';

const TOKEN = 'test-token-0123456789abcdef';
const emu = emulatorEnv('api');
const db = createFirestore(emu.projectId);
const logger = createLogger({ write: () => undefined });
const proxies = new FirestoreProxyRepository(db, logger);
const pubsub = new PubSub({ projectId: emu.projectId });
const published: Message[] = [];
let deps: ApiDeps;

const call = (method: string, target: string, body?: unknown, token: string | null = TOKEN) =>
  callApi(deps, method, target, body, token);
const proxy = (provider = 'local', labels: Record<string, string> = {}) => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  metadata: { labels },
  spec: { provider },
});
async function seedReady(name: string, egressIp: string, latencyMs: number, labels: Record<string, string> = {}) {
  await proxies.apply(
    {
      apiVersion: 'egress.dev/v1',
      kind: 'Proxy',
      action: 'apply',
      metadata: { name, labels },
      spec: { provider: 'local', placement: {}, port: 0 },
    },
    Date.now(),
    Date.now(),
  );
  const status: ProxyStatus = {
    phase: 'Ready',
    observedGeneration: 1,
    address: `127.0.0.1:${20000 + latencyMs}`,
    conditions: [],
    health: { ok: true, consecutiveFailures: 0, lastProbeAt: new Date().toISOString(), latencyMs, egressIp },
  };
  expect(await proxies.writeStatus(name, 1, status, Date.now())).toBe(true);
}

beforeAll(async () => {
  await pubsub.createTopic('proxy-requests');
  const [sub] = await pubsub.createSubscription('proxy-requests', 'api-test');
  sub.on('message', (m: Message) => {
    published.push(m);
    m.ack();
  });
  const config = parseConfig({
    installationId: 'it',
    echoUrl: 'http://127.0.0.1:9/',
    apiTokens: [TOKEN],
    providers: [{ name: 'local', type: 'process', relay: 'r1' }],
  });
  deps = {
    config,
    proxies,
    relays: new FirestoreRelayRepository(db, logger),
    reports: new FirestoreReportRepository(db, logger),
    providerStatus: new FirestoreProviderStatusRepository(db),
    bus: createPubSubBus(pubsub),
    logger,
  };
  await seedReady('d-1', '10.0.0.1', 5, { team: 'a' });
  await seedReady('d-2', '10.0.0.1', 50, { team: 'b' });
  await seedReady('d-3', '10.0.0.3', 500, { team: 'a' });
});
afterAll(() => pubsub.close());

describe('api', () => {
  it('healthz needs no token; everything under /v1 does', async () => {
    expect(await call('GET', '/healthz', undefined, null)).toMatchObject({ status: 200 });
    expect(await call('GET', '/v1/proxies', undefined, null)).toMatchObject({
      status: 401,
      body: { error: { code: 'Unauthorized' } },
    });
    expect(await call('GET', '/v1/proxies', undefined, 'wrong-token-0123456789')).toMatchObject({ status: 401 });
    expect(await call('GET', '/v1/proxies')).toMatchObject({ status: 200 });
  });

  it('PUT publishes an apply (202); bad bodies are 400 naming the field; a provider change is 409', async () => {
    const ok = await call('PUT', '/v1/proxies/new-1', proxy());
    expect(ok).toMatchObject({ status: 202, body: { accepted: true, name: 'new-1' } });
    await eventually(() =>
      expect(
        published.some((m) => m.attributes['action'] === 'apply' && m.data.toString().includes('"name":"new-1"')),
      ).toBe(true),
    );
    expect(
      await call('PUT', '/v1/proxies/new-1', { ...proxy(), spec: { provider: 'local', port: 'x' } }),
    ).toMatchObject({ status: 400, body: { error: { field: 'spec.port' } } });
    expect(await call('PUT', '/v1/proxies/new-1', { ...proxy(), metadata: { name: 'other' } })).toMatchObject({
      status: 400,
      body: { error: { field: 'metadata.name' } },
    });
    expect(await call('PUT', '/v1/proxies/Bad_Name', proxy())).toMatchObject({
      status: 400,
      body: { error: { field: 'metadata.name' } },
    });
    expect(await call('PUT', '/v1/proxies/new-1', 'nope')).toMatchObject({
      status: 400,
      body: { error: { field: '(body)' } },
    });
    expect(await call('PUT', '/v1/proxies/d-1', proxy('elsewhere'))).toMatchObject({
      status: 409,
      body: { error: { code: 'Conflict', field: 'spec.provider' } },
    });
  });

  it('GET lists with filters and shows one proxy with its events; unknown is 404', async () => {
    const list = await call('GET', '/v1/proxies?label=team=a&phase=Ready');
    expect((list.body as { items: { metadata: { name: string } }[] }).items.map((i) => i.metadata.name)).toEqual([
      'd-1',
      'd-3',
    ]);
    const one = await call('GET', '/v1/proxies/d-1');
    expect(one).toMatchObject({
      status: 200,
      body: { metadata: { name: 'd-1', generation: 1 }, status: { phase: 'Ready' }, events: [] },
    });
    expect(JSON.stringify(one.body)).not.toMatch(/lease|requestTime|password/);
    expect(await call('GET', '/v1/proxies/nope')).toMatchObject({ status: 404 });
    expect(await call('GET', '/v1/proxies?label=bad')).toMatchObject({
      status: 400,
      body: { error: { field: 'label' } },
    });
  });

  it('DELETE publishes a delete (202); unknown is 404; wrong methods are 405', async () => {
    expect(await call('DELETE', '/v1/proxies/d-3')).toMatchObject({ status: 202 });
    await eventually(() => expect(published.some((m) => m.attributes['action'] === 'delete')).toBe(true));
    expect(await call('DELETE', '/v1/proxies/nope')).toMatchObject({ status: 404 });
    expect(await call('POST', '/v1/proxies')).toMatchObject({ status: 405 });
  });

  it('discovery returns usable URLs of Ready proxies, filtered, distinct, limited, as JSON or a URL list', async () => {
    const all = (await call('GET', '/v1/discovery')).body as { name: string; url: string; egressIp: string }[];
    expect(all.map((e) => e.name)).toEqual(['d-1', 'd-2', 'd-3']);
    const creds = await proxies.credentials('d-1');
    expect(all[0]?.url).toBe(`http://${creds?.username}:${encodeURIComponent(creds?.password ?? '')}@127.0.0.1:20005`);
    const distinct = (await call('GET', '/v1/discovery?distinct=true')).body as { egressIp: string }[];
    expect(distinct.map((e) => e.egressIp)).toEqual(['10.0.0.1', '10.0.0.3']);
    expect(((await call('GET', '/v1/discovery?maxLatencyMs=60&label=team=a')).body as unknown[]).length).toBe(1);
    expect(((await call('GET', '/v1/discovery?limit=2&order=random')).body as unknown[]).length).toBe(2);
    const urls = await call('GET', '/v1/discovery?format=urls');
    expect(urls.headers?.['content-type']).toMatch(/text\/plain/);
    expect(String(urls.body).trim().split('\n')).toHaveLength(3);
    expect(await call('GET', '/v1/discovery?limit=-1')).toMatchObject({
      status: 400,
      body: { error: { field: 'limit' } },
    });
  });

  it('list and discovery answer pages of at most `limit` proxies read, the cursor leads on; a bad cursor is 400 naming it', async () => {
    // Every store read the two routes make, counted: one bounded page a call, never the whole collection.
    const reads: { limit: number; got: number }[] = [];
    let listings = 0;
    const counted = Object.assign(Object.create(proxies) as FirestoreProxyRepository, {
      page: async (after: string | null, limit: number) => {
        const page = await proxies.page(after, limit);
        reads.push({ limit, got: page.items.length });
        return page;
      },
      list: () => (listings++, proxies.list()),
    });
    const paged = (target: string) => callApi({ ...deps, proxies: counted }, 'GET', target, undefined, TOKEN);

    const listed: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await paged(`/v1/proxies?limit=1${cursor === null ? '' : `&cursor=${cursor}`}`);
      const body = res.body as { items: { metadata: { name: string } }[]; nextCursor: string | null };
      listed.push(...body.items.map((i) => i.metadata.name));
      cursor = body.nextCursor ?? null;
    } while (cursor !== null);
    expect(listed).toEqual(['d-1', 'd-2', 'd-3']);

    // Discovery's body stays an array; the next page is the RFC 8288 Link (relative) and X-Next-Cursor.
    const discovered: string[] = [];
    let target: string | undefined = '/v1/discovery?limit=2&format=json';
    while (target !== undefined) {
      const res = await paged(target);
      expect(Array.isArray(res.body)).toBe(true);
      discovered.push(...(res.body as { name: string }[]).map((e) => e.name));
      const link = /^<([^>]+)>; rel="next"$/.exec(res.headers?.['link'] ?? '');
      expect(link?.[1]?.includes(`cursor=${res.headers?.['x-next-cursor'] ?? 'none'}`) ?? true).toBe(true);
      target = link?.[1];
    }
    expect(discovered).toEqual(['d-1', 'd-2', 'd-3']);
    expect(listings).toBe(0);
    expect(reads.length).toBeGreaterThanOrEqual(5);
    expect(reads.every((r) => r.got <= r.limit && r.limit <= 2)).toBe(true);
    // The defaults, when no limit is given: 100 for the list, 500 for discovery.
    await paged('/v1/proxies');
    await paged('/v1/discovery');
    expect(reads.slice(-2).map((r) => r.limit)).toEqual([100, 500]);

    for (const bad of ['garbage', Buffer.from('egress-page:Bad_Name').toString('base64url'), 'a%2Fb'])
      for (const route of ['/v1/proxies', '/v1/discovery'])
        expect(await paged(`${route}?cursor=${bad}`)).toMatchObject({
          status: 400,
          body: { error: { code: 'Validation', field: 'cursor' } },
        });
    for (const limit of ['0', '501'])
      expect(await paged(`/v1/proxies?limit=${limit}`)).toMatchObject({
        status: 400,
        body: { error: { field: 'limit' } },
      });
    expect(await paged('/v1/discovery?limit=1001')).toMatchObject({ status: 400, body: { error: { field: 'limit' } } });
  });

  it('providers show Unknown until the monitor has checked them', async () => {
    expect(await call('GET', '/v1/providers')).toMatchObject({
      status: 200,
      body: { items: [{ name: 'local', status: 'Unknown' }] },
    });
    await deps.providerStatus.write({
      name: 'local',
      type: 'process',
      status: 'Healthy',
      message: 'ok',
      latencyMs: 3,
      lastCheckAt: new Date().toISOString(),
    });
    expect(await call('GET', '/v1/providers')).toMatchObject({
      body: { items: [{ name: 'local', status: 'Healthy' }] },
    });
    expect(await call('GET', '/v1/relays')).toMatchObject({
      status: 200,
      body: { items: [{ id: 'r1', heartbeatAt: null }] },
    });
  });
});
