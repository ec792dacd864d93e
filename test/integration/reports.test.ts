/** `POST /v1/proxies/{name}/reports` on the real emulators: validation, 202/404/429, counting once, bans, discovery `for`/`pool`. */
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
import { POOL_LABEL } from '../../shared/domain/pool.js';
import { markPoolMember } from '../support/pool-member.js';

const TOKEN = 'reports-token-0123456789abcdef';
/** A second caller with a budget of its own. */
const OTHER = 'other-token-0123456789abcdef';
const emu = emulatorEnv('reports');
const db = createFirestore(emu.projectId);
const logger = createLogger({ write: () => undefined });
const proxies = new FirestoreProxyRepository(db, logger);
const pubsub = new PubSub({ projectId: emu.projectId });
const checks: unknown[] = [];
let deps: ApiDeps;

const call = (method: string, target: string, body?: unknown, token = TOKEN) =>
  callApi(deps, method, target, body, token);
const report = (name: string, body: unknown, token = TOKEN) => call('POST', `/v1/proxies/${name}/reports`, body, token);
const names = async (query: string) =>
  ((await call('GET', `/v1/discovery${query}`)).body as { name: string }[]).map((e) => e.name);

/** A Ready proxy whose instance was created a minute ago. */
async function seed(name: string, egressIp: string, labels: Record<string, string> = {}) {
  const now = Date.now();
  const { [POOL_LABEL]: pool, ...plain } = labels;
  await proxies.apply(
    {
      apiVersion: 'egress.dev/v1',
      kind: 'Proxy',
      action: 'apply',
      metadata: { name, labels: plain },
      spec: { provider: 'local', placement: {}, port: 0 },
    },
    now,
    now,
  );
  if (pool !== undefined) await markPoolMember(db, name, pool);
  const status: ProxyStatus = {
    phase: 'Ready',
    observedGeneration: 1,
    address: `127.0.0.1:${20000 + Number(egressIp.split('.').at(-1))}`,
    instance: {
      name: `ep-${name}`,
      ip: '127.0.0.1',
      port: 20000,
      state: 'Running',
      createdAt: new Date(now - 60_000).toISOString(),
      specHash: 'h',
    },
    conditions: [],
    health: { ok: true, consecutiveFailures: 0, lastProbeAt: new Date(now).toISOString(), latencyMs: 4, egressIp },
  };
  expect(await proxies.writeStatus(name, 1, status, now)).toBe(true);
}

beforeAll(async () => {
  await pubsub.createTopic('proxy-checks');
  const [sub] = await pubsub.createSubscription('proxy-checks', 'reports-test');
  sub.on('message', (m: Message) => {
    checks.push(JSON.parse(m.data.toString()));
    m.ack();
  });
  deps = {
    config: parseConfig({
      installationId: 'it',
      echoUrl: 'http://127.0.0.1:9/',
      apiTokens: [TOKEN, OTHER],
      reports: { perCallerPerMinute: 20, excludeSeconds: 600, banTargets: 2, banWindowSeconds: 3600 },
      providers: [{ name: 'local', type: 'process', relay: 'r1' }],
    }),
    proxies,
    relays: new FirestoreRelayRepository(db, logger),
    reports: new FirestoreReportRepository(db, logger),
    providerStatus: new FirestoreProviderStatusRepository(db),
    bus: createPubSubBus(pubsub),
    logger,
  };
  await seed('r-1', '10.0.1.1');
  await seed('r-2', '10.0.1.2');
  await seed('r-3', '10.0.1.3', { 'egress.dev/pool': 'crawl' });
  await seed('r-4', '10.0.1.4', { 'egress.dev/pool': 'crawl' });
  await seed('r-5', '10.0.1.5', { 'egress.dev/pool': 'other' });
});
afterAll(() => pubsub.close());

describe('reports', () => {
  it('bad bodies are 400 naming the field; an unknown proxy is 404; other methods 405', async () => {
    const cases: [unknown, string][] = [
      [{}, 'reason'],
      [{ reason: 'slow' }, 'reason'],
      [{ reason: 'banned', target: 'https://example.com/x' }, 'target'],
      [{ reason: 'banned', target: 'example.com:443' }, 'target'],
      [{ reason: 'banned', detail: 'x'.repeat(1025) }, 'detail'],
      [{ reason: 'banned', requestId: 'has space' }, 'requestId'],
      [{ reason: 'banned', observedAt: 'yesterday' }, 'observedAt'],
      [{ reason: 'banned', extra: 1 }, 'extra'],
      ['banned', '(body)'],
    ];
    for (const [body, field] of cases) {
      const answer = await report('r-1', body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body).toMatchObject({ error: { code: 'Validation' } });
      const error = (answer.body as { error: { field?: string; message: string } }).error;
      expect(error.field, JSON.stringify(body)).toBe(field);
    }
    expect(await report('nope', { reason: 'error' })).toMatchObject({
      status: 404,
      body: { error: { code: 'NotFound' } },
    });
    expect(await report('Bad_Name', { reason: 'error' })).toMatchObject({
      status: 400,
      body: { error: { field: 'metadata.name' } },
    });
    expect(await call('GET', '/v1/proxies/r-1/reports')).toMatchObject({ status: 405 });
    expect((await proxies.get('r-1'))?.doc.status.reports).toBeUndefined();
  });

  it('a report is 202, an event, and counted on the status; a retried request id counts once', async () => {
    const first = await report('r-1', { reason: 'error', detail: 'connection reset', requestId: 'req-1' });
    expect(first).toMatchObject({
      status: 202,
      body: { accepted: true, name: 'r-1', duplicate: false, banned: false },
    });
    expect(await report('r-1', { reason: 'error', detail: 'connection reset', requestId: 'req-1' })).toMatchObject({
      status: 202,
      body: { duplicate: true },
    });
    // The same id from another caller is another report.
    expect(await report('r-1', { reason: 'error', requestId: 'req-1' }, OTHER)).toMatchObject({
      body: { duplicate: false },
    });
    await report('r-1', { reason: 'blocked', target: 'Shop.Example.COM.' });
    const doc = (await proxies.get('r-1'))?.doc;
    expect(doc?.status.reports).toMatchObject({ banned: 0, blocked: 1, error: 2 });
    expect(doc?.status.phase).toBe('Ready');
    expect(doc?.status.ban).toBeUndefined();
    const events = await proxies.events('r-1');
    expect(events.filter((e) => e.reason === 'Report:error')).toHaveLength(2);
    expect(events.find((e) => e.reason === 'Report:blocked')?.message).toMatch(
      /reported blocked for shop\.example\.com/,
    );
    // A reconcile's status write (computed before the reports) keeps the stored counts.
    expect(
      await proxies.writeStatus('r-1', 1, { ...(doc?.status as ProxyStatus), reports: undefined }, Date.now()),
    ).toBe(true);
    expect((await proxies.get('r-1'))?.doc.status.reports?.error).toBe(2);
  });

  it('a targeted report hides the proxy from discovery?for= that domain and its subdomains only', async () => {
    await report('r-2', { reason: 'blocked', target: 'example.com' });
    expect(await names('?for=example.com')).not.toContain('r-2');
    expect(await names('?for=www.example.com')).not.toContain('r-2');
    expect(await names('?for=example.org')).toContain('r-2');
    expect(await names('?for=notexample.com')).toContain('r-2');
    expect(await names('')).toContain('r-2');
    // r-1 was reported for shop.example.com: hidden there, not for its parent.
    expect(await names('?for=shop.example.com')).not.toContain('r-1');
    expect(await names('?for=example.org')).toContain('r-1');
    expect(await call('GET', '/v1/discovery?for=a/b')).toMatchObject({
      status: 400,
      body: { error: { field: 'for' } },
    });
  });

  it('discovery?pool= is the egress.dev/pool label filter', async () => {
    expect(await names('?pool=crawl')).toEqual(['r-3', 'r-4']);
    expect(await names('?pool=other')).toEqual(['r-5']);
    expect(await call('GET', '/v1/discovery?pool=Not_A_Pool')).toMatchObject({
      status: 400,
      body: { error: { field: 'pool' } },
    });
  });

  it('banned without a target bans the current instance, asks for a check, and hides it; a late report does not', async () => {
    const late = await report('r-3', { reason: 'banned', observedAt: new Date(Date.now() - 3_600_000).toISOString() });
    expect(late).toMatchObject({ status: 202, body: { banned: false, stale: true } });
    expect((await proxies.get('r-3'))?.doc.status.ban).toBeUndefined();
    const banned = await report('r-3', { reason: 'banned', detail: 'captcha on every page' });
    expect(banned).toMatchObject({
      status: 202,
      body: { banned: true, ban: { reason: 'reported banned', egressIp: '10.0.1.3' } },
    });
    const ban = (await proxies.get('r-3'))?.doc.status.ban;
    expect(ban).toMatchObject({ targets: [], egressIp: '10.0.1.3' });
    // Again: the same ban, not a second one.
    expect(await report('r-3', { reason: 'banned' })).toMatchObject({ body: { banned: false } });
    expect((await proxies.get('r-3'))?.doc.status.ban?.at).toBe(ban?.at);
    await eventually(() => expect(checks).toContainEqual({ names: ['r-3'] }));
    expect(await names('?pool=crawl')).toEqual(['r-4']);
  });

  it('banned for enough distinct targets within the window bans; fewer only excludes', async () => {
    expect(await report('r-4', { reason: 'banned', target: 'a.example' })).toMatchObject({ body: { banned: false } });
    expect(await report('r-4', { reason: 'banned', target: 'a.example' })).toMatchObject({ body: { banned: false } });
    expect(await names('?for=a.example')).not.toContain('r-4');
    expect(await report('r-4', { reason: 'banned', target: 'b.example' })).toMatchObject({
      body: { banned: true, ban: { targets: ['a.example', 'b.example'] } },
    });
  });

  it('each caller has its own budget: over it is 429 with Retry-After, and nothing is counted', async () => {
    const before = (await proxies.get('r-5'))?.doc.status.reports?.error ?? 0;
    let limited;
    for (let i = 0; i < 25 && !limited; i++) {
      const answer = await report('r-5', { reason: 'error' }, OTHER);
      if (answer.status === 429) limited = answer;
      else expect(answer.status).toBe(202);
    }
    expect(limited).toMatchObject({ status: 429, body: { error: { code: 'TooManyRequests' } } });
    expect(limited?.headers?.['retry-after']).toMatch(/^\d+$/);
    expect((limited?.body as { error: { message: string } }).error.message).toMatch(/at most 20 a minute/);
    const counted = (await proxies.get('r-5'))?.doc.status.reports?.error ?? 0;
    // OTHER sent one report to r-1 before: 19 of its 20 went to r-5.
    expect(counted - before).toBe(19);
    expect(await report('r-5', { reason: 'error' })).toMatchObject({ status: 202 });
  });
});
