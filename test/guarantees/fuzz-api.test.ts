/**
 * Bad input on the HTTP API: seeded damage to a valid Proxy body, bad names in the path, bad
 * queries and headers, sent over HTTP to the real `api` function in the functions framework's
 * server. Each gets a JSON error with a fitting status naming the field; nothing is published and
 * nothing stored; the function never answers 500.
 */
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { PubSub } from '@google-cloud/pubsub';
import { getTestServer } from '@google-cloud/functions-framework/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clip } from '../../shared/domain/text.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { apiCaller, byFramework, capProblems, overCap, type Answer } from './support/api-answers.js';
import { Figures } from './support/figures.js';
import { captureLogs, loadFunctions, recordTopic } from './support/function-entry.js';
import {
  badInputs,
  DNS_LABEL,
  INJECTIONS,
  INVALID_NAMES,
  LABEL_TEXT,
  mentions,
  namesField,
  unicodeString,
  type FieldSpec,
} from './support/fuzz-inputs.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed } from './support/prng.js';

const FILE = 'test/guarantees/fuzz-api.test.ts';
const SEED = suiteSeed(0x0f022002);
const COUNT = scenarioCount(200, 2000);
const TOKEN = 'fuzz-api-token-0123456789';
const figures = new Figures('fuzz-api', SEED);
const emu = emulatorEnv('fuzz-api');
const db = createFirestore(emu.projectId);
const pubsub = new PubSub({ projectId: emu.projectId });
const logs = captureLogs();
let server: Server;
let base: string;
let requests: Awaited<ReturnType<typeof recordTopic>>;

const BODY = {
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  metadata: { labels: { team: 'crawl' } },
  spec: { provider: 'local', placement: { catalogue: 'loopback' }, port: 20001, maxAge: '24h' },
};
const FIELDS: FieldSpec[] = [
  { path: 'apiVersion', type: 'string', max: 32 },
  { path: 'kind', type: 'string', max: 32 },
  { path: 'metadata', type: 'object', optional: true },
  { path: 'metadata.labels', type: 'object', optional: true, keyedBy: { max: 63, value: 'v', valid: LABEL_TEXT } },
  { path: 'metadata.labels.team', type: 'string', name: true, max: 63, optional: true, valid: LABEL_TEXT },
  { path: 'spec', type: 'object' },
  { path: 'spec.provider', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'spec.placement', type: 'object', optional: true, keyedBy: { max: 63, value: 'v' } },
  { path: 'spec.port', type: 'number', bounded: true, optional: true },
  { path: 'spec.maxAge', type: 'string', max: 64, optional: true },
];

const call = apiCaller(() => base, TOKEN, figures);

/** What is wrong with an answer that should be a 4xx JSON error naming `field` ('' = the body). */
function problems(a: Answer, field: string, status = 400, whole = ['(body)', '(message)']): string[] {
  const out: string[] = [];
  if (a.status !== status) out.push(`status ${a.status}, want ${status}`);
  if (!a.error) out.push(`not a JSON error: ${a.text.slice(0, 120)}`);
  else if (!namesField(a.error.field, field, whole))
    out.push(`field ${JSON.stringify(a.error.field)} does not name ${field || 'the body'}`);
  return out;
}

/**
 * A body that is not JSON (sent as `application/json`) and a path that is not valid percent-encoding
 * fail in the functions framework's express app, before the function runs: a 400 page, not ours.
 */
function frameworkProblems(a: Answer): string[] {
  figures.add('answeredByFramework');
  return a.status === 400 ? [] : [`status ${a.status}, want 400`];
}

beforeAll(async () => {
  await loadFunctions(emu, ['api'], { EGRESS_API_TOKENS: TOKEN });
  requests = await recordTopic(pubsub, 'proxy-requests');
  server = getTestServer('api');
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}, 60_000);

afterAll(async () => {
  logs.restore();
  figures.report();
  await new Promise((resolve) => server?.close(resolve));
  await requests?.close();
  await pubsub.close();
  await db.terminate();
});

describe('guarantee: bad input on the HTTP API', () => {
  it(`${COUNT} seeded bad bodies are each a 400 naming the field, and publish nothing`, async () => {
    const rng = mulberry32(SEED);
    const failures: string[] = [];
    for (const c of badInputs(rng, BODY, FIELDS, ['', 'metadata', 'spec'], COUNT)) {
      const a = await call('PUT', '/v1/proxies/fz-api', c.text);
      figures.add(`class.${c.class}`);
      figures.add('inputs');
      const wrong = byFramework(c.text)
        ? frameworkProblems(a)
        : overCap(c.text)
          ? capProblems(a)
          : problems(a, c.field);
      if (c.mentions && a.error && !overCap(c.text) && !mentions(a.error.message, c.mentions))
        wrong.push(`does not mention ${c.mentions}`);
      if (wrong.length > 0)
        failures.push(`${c.class} ${c.label}: ${wrong.join('; ')} (${a.error?.message.slice(0, 100)})`);
      else figures.add('rejectedNamingField');
    }
    expect(failures, [...failures.slice(0, 10), replayHint(FILE, SEED, COUNT)].join('\n')).toEqual([]);
  }, 120_000);

  it('bad names in the path are a 400 naming metadata.name', async () => {
    const rng = mulberry32(SEED + 1);
    const names = [
      ...INVALID_NAMES.filter((n) => n !== ''),
      ...INJECTIONS,
      ...Array.from({ length: 20 }, () => unicodeString(rng)),
    ];
    const failures: string[] = [];
    for (const name of names) {
      for (const method of ['GET', 'PUT', 'DELETE']) {
        const a = await call(
          method,
          `/v1/proxies/${encodeURIComponent(clip(name, 100))}`,
          method === 'PUT' ? JSON.stringify(BODY) : undefined,
        );
        figures.add('class.path-name');
        figures.add('inputs');
        const wrong = problems(a, 'metadata.name');
        if (wrong.length > 0) failures.push(`${method} ${JSON.stringify(name)}: ${wrong.join('; ')}`);
      }
    }
    expect(failures, [...failures.slice(0, 10), replayHint(FILE, SEED, COUNT)].join('\n')).toEqual([]);
  });

  it.each([
    ['truncated JSON', 'PUT', '/v1/proxies/fz-a', '{"apiVersion": "egress.dev/v1", "kind', ''],
    ['a JSON array', 'PUT', '/v1/proxies/fz-a', '[1,2,3]', '(body)'],
    ['an empty body', 'PUT', '/v1/proxies/fz-a', '', 'apiVersion'],
    ['a body with action', 'PUT', '/v1/proxies/fz-a', JSON.stringify({ ...BODY, action: 'delete' }), 'action'],
    [
      'a body naming another proxy',
      'PUT',
      '/v1/proxies/fz-a',
      JSON.stringify({ ...BODY, metadata: { name: 'fz-b' } }),
      'metadata.name',
    ],
    [
      'a lone surrogate in a label value',
      'PUT',
      '/v1/proxies/fz-a',
      JSON.stringify(BODY).replace('"crawl"', '"cr\\udc00awl"'),
      'metadata.labels.team',
    ],
    [
      'a lone surrogate in a placement value',
      'PUT',
      '/v1/proxies/fz-a',
      JSON.stringify(BODY).replace('"loopback"', '"loop\\ud800"'),
      'spec.placement.catalogue',
    ],
    [
      'a __proto__ key',
      'PUT',
      '/v1/proxies/fz-a',
      JSON.stringify(BODY).replace('"team"', '"__proto__"'),
      'metadata.labels.__proto__',
    ],
    ['a malformed percent-escape in the name', 'GET', '/v1/proxies/fz-%E0%A4%A', undefined, ''],
    ['a label filter without =', 'GET', '/v1/proxies?label=team', undefined, 'label'],
    ['a discovery limit that is not a number', 'GET', '/v1/discovery?limit=ten', undefined, 'limit'],
    ['a discovery format that does not exist', 'GET', '/v1/discovery?format=xml', undefined, 'format'],
  ])(
    "%s is a 400 naming the field (or the framework's 400 for what is not JSON)",
    async (_what, method, path, body, field) => {
      const a = await call(method, path, body);
      figures.add('handPicked');
      figures.add('inputs');
      expect(field === '' ? frameworkProblems(a) : problems(a, field), a.text.slice(0, 300)).toEqual([]);
    },
  );

  it.each([
    ['no Authorization header', {}],
    ['a bare Bearer', { authorization: 'Bearer' }],
    ['two tokens', { authorization: `Bearer ${TOKEN} ${TOKEN}` }],
    ['Basic auth', { authorization: `Basic ${Buffer.from(`u:${TOKEN}`).toString('base64')}` }],
    ['a 6 000-character token', { authorization: `Bearer ${'t'.repeat(6000)}` }],
    ['the token with a byte missing', { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
    ['the token with a byte more', { authorization: `Bearer ${TOKEN}x` }],
    ['non-ASCII bytes', { authorization: 'Bearer \u00ff\u00fe\u00fd-0123456789abcdef' }],
  ])('%s is a 401 JSON error', async (_what, headers) => {
    const a = await call('GET', '/v1/proxies', undefined, { authorization: '', ...headers });
    figures.add('class.auth-header');
    figures.add('inputs');
    expect(a.status).toBe(401);
    expect(a.error?.code).toBe('Unauthorized');
  });

  it('afterwards: nothing was published and nothing stored; no answer was a 500', async () => {
    await requests.settled();
    expect(requests.messages.map((m) => m.data.toString().slice(0, 200))).toEqual([]);
    expect((await db.collection('proxies').get()).size).toBe(0);
    expect(logs.lines.filter((l) => l.includes('"severity":"ERROR"'))).toEqual([]);
    figures.add('published', requests.messages.length);
  });
});
