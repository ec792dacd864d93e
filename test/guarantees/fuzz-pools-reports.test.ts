/**
 * Bad input on the surfaces pools and reports added: seeded damage to a valid ProxyPool request on
 * the request topic (the real `requests` function) and at `PUT /v1/pools/{name}`, and
 * to a valid report at `POST /v1/proxies/{name}/reports` (the real `api` function over HTTP). Each
 * is refused naming the field; nothing is published, stored or counted from it; nothing answers 500.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { PubSub } from '@google-cloud/pubsub';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { apiCaller, byFramework, capProblems, overCap, type Answer } from './support/api-answers.js';
import { Figures } from './support/figures.js';
import {
  base64,
  captureLogs,
  cloudEvent,
  loadFunctions,
  pubSubFunction,
  recordTopic,
} from './support/function-entry.js';
import { badInputs, DNS_LABEL, mentions, namesField, type FieldSpec } from './support/fuzz-inputs.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed } from './support/prng.js';

const FILE = 'test/guarantees/fuzz-pools-reports.test.ts';
const SEED = suiteSeed(0x0f022003);
const COUNT = scenarioCount(150, 2000);
const TOKEN = 'fuzz-pools-token-0123456789';
const figures = new Figures('fuzz-pools-reports', SEED);
const emu = emulatorEnv('fuzz-pools');
const db = createFirestore(emu.projectId);
const pubsub = new PubSub({ projectId: emu.projectId });
const logs = captureLogs();
let server: Server;
let base: string;
let published: Awaited<ReturnType<typeof recordTopic>>;
/** The check kicks the functions publish (the topic must exist for them to). */
let checks: Awaited<ReturnType<typeof recordTopic>>;

/** A pool name leaves room for the member suffix (`-xxxxx`): at most 57 characters. */
const POOL_NAME = /^[a-z0-9]([-a-z0-9]{0,55}[a-z0-9])?$/;
/** A label key: a name, optionally after a DNS prefix and a slash (`egress.dev/pool`). */
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
/** A report target: a host name (any case, an optional trailing dot) or an IPv4 address. */
const HOST = /^([A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?\.)*[A-Za-z0-9_]([-A-Za-z0-9_]{0,61}[A-Za-z0-9_])?\.?$/;

const POOL = {
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name: 'fz-pool', labels: { team: 'crawl' } },
  spec: {
    replicas: 4,
    minAvailable: 3,
    maxSurge: 1,
    template: {
      metadata: { labels: { tier: 'a' } },
      spec: { provider: 'local', placement: { catalogue: 'loopback' }, maxAge: '24h' },
    },
    spread: [{ provider: 'local' }, { provider: 'local-b', placement: { catalogue: 'loopback' } }],
  },
};
const POOL_DELETE = { apiVersion: 'egress.dev/v1', kind: 'ProxyPool', action: 'delete', metadata: { name: 'fz-pool' } };

const POOL_FIELDS: FieldSpec[] = [
  { path: 'apiVersion', type: 'string', max: 32 },
  { path: 'metadata', type: 'object' },
  { path: 'metadata.name', type: 'string', name: true, max: 57, valid: POOL_NAME },
  { path: 'metadata.labels', type: 'object', optional: true, keyedBy: { max: 253, value: 'v', valid: LABEL_KEY } },
  { path: 'spec', type: 'object' },
  { path: 'spec.replicas', type: 'number', bounded: true },
  { path: 'spec.minAvailable', type: 'number', bounded: true, optional: true },
  { path: 'spec.maxSurge', type: 'number', bounded: true, optional: true },
  { path: 'spec.template', type: 'object' },
  { path: 'spec.template.metadata', type: 'object', optional: true },
  {
    path: 'spec.template.metadata.labels',
    type: 'object',
    optional: true,
    keyedBy: { max: 253, value: 'v', valid: LABEL_KEY },
  },
  { path: 'spec.template.spec', type: 'object' },
  { path: 'spec.template.spec.provider', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'spec.template.spec.placement', type: 'object', optional: true, keyedBy: { max: 63, value: 'v' } },
  { path: 'spec.template.spec.maxAge', type: 'string', max: 64, optional: true },
  { path: 'spec.spread', type: 'array', optional: true },
  { path: 'spec.spread.0', type: 'object' },
  { path: 'spec.spread.1.provider', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'spec.spread.1.placement', type: 'object', optional: true, keyedBy: { max: 63, value: 'v' } },
];
const POOL_OBJECTS = ['', 'metadata', 'spec', 'spec.template', 'spec.template.spec', 'spec.spread.0'];
const POOL_DELETE_FIELDS: FieldSpec[] = [
  { path: 'apiVersion', type: 'string', max: 32 },
  { path: 'metadata', type: 'object' },
  { path: 'metadata.name', type: 'string', name: true, max: 57, valid: POOL_NAME },
];

const REPORT = {
  reason: 'banned',
  target: 'shop.example.com',
  detail: 'HTTP 403 with a captcha page',
  requestId: 'crawl-7f3a',
  observedAt: '2026-12-01T10:00:00Z',
};
const REPORT_FIELDS: FieldSpec[] = [
  { path: 'reason', type: 'string', name: true, max: 16, valid: /^(banned|blocked|error)$/ },
  { path: 'target', type: 'string', name: true, max: 253, optional: true, valid: HOST },
  { path: 'detail', type: 'string', max: 1024, optional: true, freeText: true },
  { path: 'requestId', type: 'string', name: true, max: 128, optional: true, valid: /^[\x21-\x7e]{1,128}$/ },
  { path: 'observedAt', type: 'string', name: true, max: 40, optional: true, valid: /^\d{4}-\d\d-\d\dT[\d:.]+Z$/ },
];

const call = apiCaller(() => base, TOKEN, figures);

/** What is wrong with an HTTP answer that should be a 400 JSON error naming `field`. */
function httpProblems(a: Answer, text: string, field: string, mention?: string): string[] {
  if (byFramework(text)) return a.status === 400 ? [] : [`status ${a.status}, want the framework's 400`];
  if (overCap(text)) return capProblems(a);
  const out: string[] = [];
  if (a.status !== 400) out.push(`status ${a.status}, want 400`);
  if (!a.error) out.push(`not a JSON error: ${a.text.slice(0, 120)}`);
  else {
    if (!namesField(a.error.field, field, ['(body)', '(message)']))
      out.push(`field ${JSON.stringify(a.error.field)} does not name ${field || 'the body'}`);
    if (mention && !mentions(a.error.message, mention)) out.push(`does not mention ${mention}`);
  }
  return out;
}

async function rejection(messageId: string) {
  const snap = await db.collection('rejections').doc(messageId).get();
  return snap.exists ? { field: snap.get('field') as string | null, reason: String(snap.get('reason')) } : undefined;
}

/** Delivers one request event to the requests function; returns what it threw. */
async function deliver(text: string): Promise<{ messageId: string; thrown: unknown[] }> {
  const event = cloudEvent('proxy-requests', base64(text));
  const thrown: unknown[] = [];
  await pubSubFunction('requests')(event).catch((err: unknown) => thrown.push(err));
  figures.add('invocations');
  return { messageId: event.messageId, thrown };
}

const failuresWithReplay = (failures: string[]) => [...failures.slice(0, 10), replayHint(FILE, SEED, COUNT)].join('\n');

beforeAll(async () => {
  await loadFunctions(emu, ['requests', 'api'], { EGRESS_API_TOKENS: TOKEN, EGRESS_UNSIGNED_RELAYS: 'development' });
  published = await recordTopic(pubsub, 'proxy-requests');
  checks = await recordTopic(pubsub, 'proxy-checks');
  server = getTestServer('api');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  // The proxy the reports are about: a valid apply through the real requests function.
  const proxy = {
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    action: 'apply',
    metadata: { name: 'fz-target' },
    spec: { provider: 'local' },
  };
  const { thrown } = await deliver(JSON.stringify(proxy));
  expect(thrown).toEqual([]);
}, 60_000);

afterAll(async () => {
  logs.restore();
  figures.report();
  await new Promise((resolve) => server?.close(resolve));
  await published?.close();
  await checks?.close();
  await pubsub.close();
  await db.terminate();
});

describe('guarantee: bad input on pools and reports', () => {
  it(`${COUNT} seeded bad ProxyPool requests on the topic are each acknowledged and rejected once, naming the field`, async () => {
    const rng = mulberry32(SEED);
    const cases = [
      ...badInputs(rng, POOL, POOL_FIELDS, POOL_OBJECTS, Math.ceil(COUNT * 0.8)),
      ...badInputs(rng, POOL_DELETE, POOL_DELETE_FIELDS, ['', 'metadata'], Math.floor(COUNT * 0.2)),
    ];
    const failures: string[] = [];
    for (const c of cases) {
      const { messageId, thrown } = await deliver(c.text);
      figures.add(`topic.class.${c.class}`);
      figures.add('inputs');
      const r = await rejection(messageId);
      const problems = [
        ...thrown.map((e) => `threw (would be redelivered): ${String(e)}`),
        ...(r ? [] : ['no rejection recorded']),
        ...(r && !namesField(r.field ?? undefined, c.field, ['(message)'])
          ? [`field ${JSON.stringify(r.field)} does not name ${c.field || 'the message'}`]
          : []),
        ...(r && c.mentions && !mentions(r.reason, c.mentions) ? [`reason does not mention ${c.mentions}`] : []),
      ];
      if (problems.length > 0)
        failures.push(`${c.class} ${c.label}: ${problems.join('; ')} (${r?.reason.slice(0, 120)})`);
      else figures.add('rejectedNamingField');
    }
    expect(failures, failuresWithReplay(failures)).toEqual([]);
  }, 180_000);

  it(`${COUNT} seeded bad bodies at PUT /v1/pools/{name} are each a 400 naming the field`, async () => {
    const rng = mulberry32(SEED + 1);
    const { action: _action, ...body } = POOL;
    // The path names the pool: metadata (and its name) may be left out of the body.
    const fields = POOL_FIELDS.filter((f) => f.path !== 'metadata.name').map((f) =>
      f.path === 'metadata' ? { ...f, optional: true } : f,
    );
    const failures: string[] = [];
    for (const c of badInputs(rng, body, fields, POOL_OBJECTS, COUNT)) {
      const a = await call('PUT', '/v1/pools/fz-pool', c.text);
      figures.add(`pools.class.${c.class}`);
      figures.add('inputs');
      const wrong = httpProblems(a, c.text, c.text === '' ? 'apiVersion' : c.field, c.mentions);
      if (wrong.length > 0)
        failures.push(`${c.class} ${c.label}: ${wrong.join('; ')} (${a.error?.message.slice(0, 100)})`);
      else figures.add('rejectedNamingField');
    }
    expect(failures, failuresWithReplay(failures)).toEqual([]);
  }, 180_000);

  it(`${COUNT} seeded bad reports are each a 400 naming the field, and count nothing`, async () => {
    const rng = mulberry32(SEED + 2);
    const failures: string[] = [];
    for (const c of badInputs(rng, REPORT, REPORT_FIELDS, [''], COUNT)) {
      const a = await call('POST', '/v1/proxies/fz-target/reports', c.text);
      figures.add(`reports.class.${c.class}`);
      figures.add('inputs');
      // An empty body is an empty report: its first required field is missing.
      const wrong = httpProblems(a, c.text, c.text === '' ? 'reason' : c.field, c.mentions);
      if (wrong.length > 0)
        failures.push(`${c.class} ${c.label}: ${wrong.join('; ')} (${a.error?.message.slice(0, 100)})`);
      else figures.add('rejectedNamingField');
    }
    expect(failures, failuresWithReplay(failures)).toEqual([]);
  }, 180_000);

  it('the valid pool and the valid report are accepted (the seeds damage what is otherwise accepted)', async () => {
    const { action: _action, ...body } = POOL;
    const pool = await call('PUT', '/v1/pools/fz-pool', JSON.stringify(body));
    expect(pool.status, pool.text).toBe(202);
    const report = await call(
      'POST',
      '/v1/proxies/fz-target/reports',
      JSON.stringify({ ...REPORT, requestId: 'fz-ok' }),
    );
    expect(report.status, report.text).toBe(202);
  });

  it('afterwards: no pool stored, nothing published but the valid pool, one report counted', async () => {
    expect((await db.collection('pools').get()).size).toBe(0);
    expect((await db.collection('proxies').get()).docs.map((d) => d.id)).toEqual(['fz-target']);
    const events = await db.collection('proxies').doc('fz-target').collection('events').get();
    const reports = events.docs.filter((d) => String(d.get('reason')).startsWith('Report'));
    expect(reports.map((d) => d.get('message') as string)).toHaveLength(1);
    await expect.poll(() => published.messages.length, { timeout: 5000 }).toBe(1);
    expect(JSON.parse(published.messages[0]?.data.toString() ?? '{}')).toMatchObject({
      kind: 'ProxyPool',
      action: 'apply',
    });
    expect(logs.lines.filter((l) => l.includes('"severity":"ERROR"'))).toEqual([]);
    figures.add('published', published.messages.length);
  });
});
