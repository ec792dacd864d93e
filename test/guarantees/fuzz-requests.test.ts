/**
 * Bad input on the request topic: seeded damage to valid apply and delete requests, plus a table
 * of hand-picked nasty messages, delivered as Pub/Sub CloudEvents to the real `requests`
 * function. Each is acknowledged (no throw, so no redelivery loop), rejected once with an
 * error naming the field, and leaves nothing corrupt in Firestore.
 */
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { proxyDocSchema } from '../../shared/domain/status.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { Figures } from './support/figures.js';
import {
  base64,
  captureLogs,
  cloudEvent,
  loadFunctions,
  pubSubFunction,
  recordTopic,
} from './support/function-entry.js';
import { badInputs, DNS_LABEL, LABEL_TEXT, mentions, namesField, type FieldSpec } from './support/fuzz-inputs.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed } from './support/prng.js';
import type { CloudEventLike } from '../../shared/telemetry/invocation.js';

const FILE = 'test/guarantees/fuzz-requests.test.ts';
const SEED = suiteSeed(0x0f022001);
const COUNT = scenarioCount(200, 3000);
const figures = new Figures('fuzz-requests', SEED);
const emu = emulatorEnv('fuzz-requests');
const db = createFirestore(emu.projectId);
const pubsub = new PubSub({ projectId: emu.projectId });
let checks: Awaited<ReturnType<typeof recordTopic>>;
const logs = captureLogs();
/** Proxies the hand-picked valid requests create: the only documents that may exist afterwards. */
const accepted = new Map<string, unknown>();

const APPLY = {
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name: 'fz-valid', labels: { team: 'crawl' } },
  spec: { provider: 'local', placement: { catalogue: 'loopback' }, port: 20001, maxAge: '24h' },
};
const DELETE = { apiVersion: 'egress.dev/v1', kind: 'Proxy', action: 'delete', metadata: { name: 'fz-valid' } };
const APPLY_FIELDS: FieldSpec[] = [
  { path: 'apiVersion', type: 'string', max: 32 },
  { path: 'kind', type: 'string', max: 32 },
  { path: 'metadata', type: 'object' },
  { path: 'metadata.name', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'metadata.labels', type: 'object', optional: true, keyedBy: { max: 63, value: 'v', valid: LABEL_TEXT } },
  { path: 'metadata.labels.team', type: 'string', name: true, max: 63, optional: true, valid: LABEL_TEXT },
  { path: 'spec', type: 'object' },
  { path: 'spec.provider', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'spec.placement', type: 'object', optional: true, keyedBy: { max: 63, value: 'v' } },
  { path: 'spec.placement.catalogue', type: 'string', max: 1024, optional: true },
  { path: 'spec.port', type: 'number', bounded: true, optional: true },
  { path: 'spec.maxAge', type: 'string', max: 64, optional: true },
];
const DELETE_FIELDS: FieldSpec[] = [
  { path: 'apiVersion', type: 'string', max: 32 },
  { path: 'metadata', type: 'object' },
  { path: 'metadata.name', type: 'string', name: true, max: 63, valid: DNS_LABEL },
];

/** Delivers one event to the requests function; returns what it threw. */
async function deliver(event: CloudEventLike): Promise<unknown[]> {
  const thrown: unknown[] = [];
  const started = Date.now();
  await pubSubFunction('requests')(event).catch((err: unknown) => thrown.push(err));
  figures.max('slowestInvocationMs', Date.now() - started);
  figures.add('invocations');
  return thrown;
}

async function rejection(messageId: string) {
  const snap = await db.collection('rejections').doc(messageId).get();
  return snap.exists ? { field: snap.get('field') as string | null, reason: String(snap.get('reason')) } : undefined;
}

beforeAll(async () => {
  await loadFunctions(emu, ['requests'], { EGRESS_UNSIGNED_RELAYS: 'development' });
  checks = await recordTopic(pubsub, 'proxy-checks');
}, 60_000);

afterAll(async () => {
  logs.restore();
  figures.report();
  await checks?.close();
  await pubsub.close();
  await db.terminate();
});

describe('guarantee: bad input on the request topic', () => {
  it(`${COUNT} seeded bad requests are each acknowledged and rejected once, naming the field`, async () => {
    const rng = mulberry32(SEED);
    const cases = [
      ...badInputs(rng, APPLY, APPLY_FIELDS, ['', 'metadata', 'spec'], Math.ceil(COUNT * 0.75)),
      ...badInputs(rng, DELETE, DELETE_FIELDS, ['', 'metadata'], Math.floor(COUNT * 0.25)),
    ];
    const failures: string[] = [];
    for (const c of cases) {
      const event = cloudEvent('proxy-requests', base64(c.text));
      const thrown = await deliver(event);
      figures.add(`class.${c.class}`);
      figures.add('inputs');
      const r = await rejection(event.messageId);
      const problems = [
        ...thrown.map((e) => `threw (would be redelivered): ${String(e)}`),
        ...(r ? [] : ['no rejection recorded']),
        ...(r && !namesField(r.field ?? undefined, c.field, ['(message)'])
          ? [`field ${JSON.stringify(r.field)} does not name ${c.field || 'the message'}`]
          : []),
        ...(r && r.reason.length < 5 ? ['no reason'] : []),
        ...(r && c.mentions && !mentions(r.reason, c.mentions) ? [`reason does not mention ${c.mentions}`] : []),
        ...(r && (r.field ?? '').length > 200 ? [`field is ${(r.field ?? '').length} characters`] : []),
      ];
      if (problems.length > 0)
        failures.push(`${c.class} ${c.label}: ${problems.join('; ')} (${r?.reason.slice(0, 120)})`);
      else figures.add('rejectedNamingField');
    }
    expect(failures, [...failures.slice(0, 10), replayHint(FILE, SEED, COUNT)].join('\n')).toEqual([]);
  }, 120_000);

  const nested = (depth: number) =>
    `{"apiVersion":"egress.dev/v1","kind":"Proxy","action":"apply","metadata":{"name":"deep"},"spec":{"provider":"local","placement":{"a":${'{"b":'.repeat(depth)}1${'}'.repeat(depth)}}}}`;
  /** An invalid request whose character 4096 is the first half of an emoji (the stored excerpt's cut). */
  const splitEmoji = () => {
    for (let pad = 0; ; pad++) {
      const text = JSON.stringify({
        ...APPLY,
        metadata: { name: 'NOT-VALID', labels: {} },
        spec: { provider: 'local', placement: { pad: `${'a'.repeat(pad)}${'😀'.repeat(2100)}` } },
      });
      if (/[\uD800-\uDBFF]/.test(text.charAt(4095))) return text;
    }
  };
  const HAND_PICKED: [string, string, () => ReturnType<typeof cloudEvent>][] = [
    ['data that is not base64', '(message)', () => cloudEvent('proxy-requests', '!!!% not base64 ***')],
    [
      'base64 of bytes that are not UTF-8',
      '(message)',
      () => cloudEvent('proxy-requests', Buffer.from([0xff, 0xfe, 0x00, 0xc3]).toString('base64')),
    ],
    ['an empty body', '(message)', () => cloudEvent('proxy-requests', '')],
    [
      'a byte-order mark before the JSON',
      '(message)',
      () => cloudEvent('proxy-requests', base64(`\ufeff${JSON.stringify(APPLY)}`)),
    ],
    ['JSON nested 100 000 deep', 'spec.placement.a', () => cloudEvent('proxy-requests', base64(nested(100_000)))],
    [
      'a lone surrogate in a placement value',
      'spec.placement.zone',
      () =>
        cloudEvent(
          'proxy-requests',
          base64(JSON.stringify(APPLY).replace('"catalogue":"loopback"', '"zone":"eu\\ud800"')),
        ),
    ],
    [
      'a label key named __proto__',
      'metadata.labels.__proto__',
      () => cloudEvent('proxy-requests', base64(JSON.stringify(APPLY).replace('"team"', '"__proto__"'))),
    ],
    [
      'a rejected body whose first 4096 characters end inside an emoji',
      'metadata.name',
      () => cloudEvent('proxy-requests', base64(splitEmoji())),
    ],
    [
      'JSON nested 40 deep in the placement',
      'spec.placement.a',
      () => cloudEvent('proxy-requests', base64(nested(40))),
    ],
    [
      'an action in the wrong case',
      'action',
      () => cloudEvent('proxy-requests', base64(JSON.stringify({ ...APPLY, action: 'Apply' }))),
    ],
    [
      'a 1 MB label value',
      'metadata.labels.a',
      () =>
        cloudEvent(
          'proxy-requests',
          base64(JSON.stringify({ ...APPLY, metadata: { name: 'big', labels: { a: 'v'.repeat(1 << 20) } } })),
        ),
    ],
    [
      'a port just past an integer',
      'spec.port',
      () =>
        cloudEvent(
          'proxy-requests',
          base64(JSON.stringify({ ...APPLY, spec: { provider: 'local', port: 20000.000001 } })),
        ),
    ],
    [
      'duplicate keys whose last is invalid',
      'metadata.name',
      () =>
        cloudEvent(
          'proxy-requests',
          base64(
            '{"apiVersion":"egress.dev/v1","kind":"Proxy","action":"apply","metadata":{"name":"ok"},"metadata":{"name":"NOT OK"},"spec":{"provider":"local"}}',
          ),
        ),
    ],
  ];
  for (const [what, field, make] of HAND_PICKED)
    it(`${what} is acknowledged and rejected naming ${field}`, async () => {
      const event = make();
      const thrown = await deliver(event);
      figures.add('handPicked');
      figures.add('inputs');
      expect(thrown).toEqual([]);
      const r = await rejection(event.messageId);
      expect(r?.reason).toBeTruthy();
      expect(
        namesField(r?.field ?? undefined, field, ['(message)']),
        `field ${r?.field}: ${r?.reason.slice(0, 200)}`,
      ).toBe(true);
    });

  it('an envelope that is not a Pub/Sub message is acknowledged and recorded', async () => {
    const event = { id: 'not-pubsub-1', source: '//x/topics/proxy-requests', data: 'just a string' };
    expect(await deliver(event)).toEqual([]);
    expect((await rejection('not-pubsub-1'))?.field).toBe('(message)');
  });

  it.each([
    [
      'a label key named constructor',
      { ...APPLY, metadata: { name: 'fz-ctor', labels: { constructor: 'x', toString: 'y' } } },
    ],
    [
      'shell text in a placement value (the provider validates placement)',
      {
        ...APPLY,
        metadata: { name: 'fz-shell', labels: {} },
        spec: { provider: 'local', placement: { bindAddress: '$(rm -rf /); `id`' } },
      },
    ],
    [
      '64 labels at the limit',
      {
        ...APPLY,
        metadata: {
          name: 'fz-labels',
          labels: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, 'v'.repeat(63)])),
        },
      },
    ],
    ['a 63-character name', { ...APPLY, metadata: { name: `a${'-b'.repeat(31)}`, labels: {} } }],
  ])('valid but odd: %s is stored exactly as sent', async (_what, body) => {
    const event = cloudEvent('proxy-requests', base64(JSON.stringify(body)), {
      traceparent: 'garbage',
      requestId: 'x'.repeat(1024),
    });
    expect(await deliver(event)).toEqual([]);
    figures.add('handPicked');
    figures.add('inputs');
    const snap = await db.collection('proxies').doc(body.metadata.name).get();
    expect(snap.get('metadata')).toEqual(body.metadata);
    expect(snap.get('spec')).toEqual({ port: 0, ...body.spec });
    accepted.set(body.metadata.name, body);
  });

  it('afterwards: only the valid proxies exist, every document parses, only they were checked', async () => {
    const docs = await db.collection('proxies').get();
    expect(docs.docs.map((d) => d.id).sort()).toEqual([...accepted.keys()].sort());
    for (const d of docs.docs) expect(proxyDocSchema.safeParse(d.data()).success, d.id).toBe(true);
    const credentials = await db.collection('credentials').get();
    expect(credentials.docs.map((d) => d.id).sort()).toEqual([...accepted.keys()].sort());
    // Each valid request was checked in its own invocation: no relay reported here, so the check
    // found the provider down and recorded it on Provisioned. Nothing else was checked or kicked.
    for (const d of docs.docs)
      expect(d.get('status.conditions'), d.id).toContainEqual(
        expect.objectContaining({ type: 'Provisioned', reason: 'ProviderDown' }),
      );
    await checks.settled();
    const kicked = checks.messages.flatMap((m) => (JSON.parse(m.data.toString()) as { names?: string[] }).names ?? []);
    expect(kicked.filter((name) => !accepted.has(name))).toEqual([]);
    figures.add('corruptDocuments', 0);
    figures.add('proxiesStoredFromBadInput', docs.size - accepted.size);
  });
});
