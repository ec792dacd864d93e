/**
 * Bad input on the relay-reports topic, and relay identity: seeded damage to a valid report,
 * reports that speak for another relay and reports not signed by a key of the relay they name,
 * delivered as CloudEvents to the real `relay-report`
 * function. Each is acknowledged and rejected with a log line naming the field, and changes
 * nothing that is stored: no relay's heartbeat, inventory or commands.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RelayReport } from '../../shared/wire/protocol.js';
import { parseRelayKeys, signText, type SigningKey } from '../../shared/wire/signature.js';
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
import { badInputs, DNS_LABEL, namesField, type FieldSpec } from './support/fuzz-inputs.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed } from './support/prng.js';

const FILE = 'test/guarantees/fuzz-relay-reports.test.ts';
const SEED = suiteSeed(0x0f022003);
const COUNT = scenarioCount(200, 2000);
const RELAY = 'local';
const figures = new Figures('fuzz-relay-reports', SEED);
const emu = emulatorEnv('fuzz-reports');
const db = createFirestore(emu.projectId);
const pubsub = new PubSub({ projectId: emu.projectId });
const logs = captureLogs();
let checks: Awaited<ReturnType<typeof recordTopic>>;
let seq = 1;

const item = (name: string, proxy: string) => ({
  name,
  proxy,
  provider: 'local',
  installationId: 'local',
  specHash: 'h1',
  state: 'Running',
  ip: '127.0.0.1',
  port: 20001,
  createdAt: 1_700_000_000_000,
});
const report = (over: Partial<RelayReport> = {}): RelayReport => ({
  relay: RELAY,
  bootId: 'boot-1',
  seq: ++seq,
  sentAt: Date.now(),
  startedAt: 1_700_000_000_000,
  providers: [{ name: 'local', type: 'process', ok: true, message: 'ok' }],
  instances: [item('ep-a-1', 'a'), item('ep-b-1', 'b')] as RelayReport['instances'],
  results: [{ commandId: 'c-1', provider: 'local', name: 'ep-c-1', kind: 'create', ok: true }],
  traces: { 'ep-a-1': '00-0123456789abcdef0123456789abcdef-0123456789abcdef-01' },
  ...over,
});
const FIELDS: FieldSpec[] = [
  { path: 'relay', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'bootId', type: 'string', max: 64 },
  { path: 'seq', type: 'number', bounded: true },
  { path: 'sentAt', type: 'number' },
  { path: 'startedAt', type: 'number' },
  { path: 'providers', type: 'array' },
  { path: 'providers.0.name', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'providers.0.ok', type: 'boolean' },
  { path: 'providers.0.message', type: 'string', max: 1024 },
  { path: 'instances', type: 'array' },
  { path: 'instances.0.name', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'instances.0.proxy', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'instances.0.installationId', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'instances.0.state', type: 'string', max: 16 },
  { path: 'instances.0.ip', type: 'string', max: 64 },
  { path: 'instances.0.port', type: 'number', bounded: true },
  { path: 'instances.0.createdAt', type: 'number' },
  { path: 'results', type: 'array' },
  { path: 'results.0.commandId', type: 'string', max: 128 },
  { path: 'results.0.name', type: 'string', name: true, max: 63, valid: DNS_LABEL },
  { path: 'traces', type: 'object', optional: true, keyedBy: { max: 63, value: 'x', valid: DNS_LABEL } },
];

// The functions check every report's signature: local has a new key and the one it replaces.
const KEYS = JSON.stringify({
  local: [
    { id: 'k2', secret: randomBytes(32).toString('base64') },
    { id: 'k1', secret: randomBytes(32).toString('base64') },
  ],
  far: [{ id: 'k1', secret: randomBytes(32).toString('base64') }],
});
const keyring = parseRelayKeys(KEYS);
const keyOf = (relay: string, index = 0): SigningKey => {
  const key = keyring.get(relay)?.[index];
  if (!key) throw new Error(`no key ${index} for ${relay}`);
  return key;
};

/** Delivers a report, signed with the first key of the relay its attribute names (when it has one). */
const deliver = async (
  text: string,
  attributes: Record<string, string> = { relay: RELAY },
  signature = keyring.has(attributes['relay'] ?? '') ? signText(keyOf(attributes['relay'] ?? ''), 'report', text) : {},
) => {
  const event = cloudEvent('relay-reports', base64(text), { ...attributes, ...signature });
  const before = logs.lines.length;
  let thrown: Error | undefined;
  await pubSubFunction('relay-report')(event).catch(
    (err: unknown) => (thrown = err instanceof Error ? err : new Error(String(err))),
  );
  figures.add('invocations');
  const lines = logs.lines.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
  const rejection = lines.find((l) => l['message'] === 'relay report rejected' && l['messageId'] === event.messageId);
  return { thrown, rejection: rejection as { field?: string; reason?: string } | undefined };
};

/** Everything stored about every relay (documents and their subcollections), for before/after comparison. */
async function storedRelays(): Promise<string> {
  const out: Record<string, unknown> = {};
  for (const relay of await db.collection('relays').listDocuments()) {
    out[relay.id] = (await relay.get()).data();
    for (const sub of ['instances', 'commands'])
      for (const d of (await relay.collection(sub).get()).docs) out[`${relay.id}/${sub}/${d.id}`] = d.data();
  }
  return JSON.stringify(out);
}

beforeAll(async () => {
  // Two relays: `local` (the embedded default's) and `far`.
  const dir = mkdtempSync(join(tmpdir(), 'fuzz-reports-'));
  const config = {
    ...LOCAL_DEFAULT_CONFIG,
    providers: [...LOCAL_DEFAULT_CONFIG.providers, { name: 'far-proc', type: 'process', relay: 'far' }],
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config));
  await loadFunctions(emu, ['relay-report'], { EGRESS_CONFIG: join(dir, 'config.json'), EGRESS_RELAY_KEYS: KEYS });
  checks = await recordTopic(pubsub, 'proxy-checks');
  // Relay `local` has an inventory and a pending command: what forged and broken reports must not touch.
  await db.collection('relays').doc(RELAY).collection('commands').doc('ep-c-1').set({
    commandId: 'c-1',
    kind: 'create',
    issuedAt: 1,
    provider: 'local',
    proxy: 'c',
    specHash: 'h1',
    done: false,
    error: null,
  });
  expect((await deliver(JSON.stringify(report({ results: [] })))).rejection).toBeUndefined();
}, 60_000);

afterAll(async () => {
  logs.restore();
  figures.report();
  await checks?.close();
  await pubsub.close();
  await db.terminate();
});

describe('guarantee: bad input on the relay-reports topic', () => {
  it(`${COUNT} seeded bad reports are acknowledged, rejected naming the field, and change nothing`, async () => {
    const rng = mulberry32(SEED);
    const stored = await storedRelays();
    const failures: string[] = [];
    for (const c of badInputs(rng, report(), FIELDS, [], COUNT)) {
      const { thrown, rejection } = await deliver(c.text);
      figures.add(`class.${c.class}`);
      figures.add('inputs');
      const wrong = [
        ...(thrown ? [`threw (would be redelivered): ${String(thrown)}`] : []),
        ...(rejection ? [] : ['not rejected']),
        ...(rejection && !namesField(rejection.field, c.field, ['(message)'])
          ? [`field ${JSON.stringify(rejection.field)} does not name ${c.field || 'the message'}`]
          : []),
      ];
      if (wrong.length > 0)
        failures.push(`${c.class} ${c.label}: ${wrong.join('; ')} (${rejection?.reason?.slice(0, 100)})`);
      else figures.add('rejectedNamingField');
    }
    expect(failures, [...failures.slice(0, 10), replayHint(FILE, SEED, COUNT)].join('\n')).toEqual([]);
    expect(await storedRelays()).toBe(stored);
  }, 120_000);
});

describe('guarantee: a report speaks only for the relay that sent it', () => {
  it.each([
    ['naming relay local, sent by relay evil', { relay: 'evil' }, 'relay'],
    ['naming relay local, with no sender attribute', {}, 'attributes.relay'],
    ['naming relay local, sent by "Local"', { relay: 'Local' }, 'relay'],
  ])('a report %s is rejected and changes nothing', async (_what, attributes, field) => {
    const stored = await storedRelays();
    // It would empty local's inventory and complete its pending command.
    const forged = report({
      instances: [],
      results: [{ commandId: 'c-1', provider: 'local', name: 'ep-c-1', kind: 'create', ok: true }],
    });
    const { thrown, rejection } = await deliver(JSON.stringify(forged), attributes);
    figures.add('forgedReports');
    figures.add('inputs');
    expect(thrown).toBeUndefined();
    expect(rejection?.field).toBe(field);
    expect(await storedRelays()).toBe(stored);
  });

  it('a report from a relay no provider names is rejected and stores nothing', async () => {
    const stored = await storedRelays();
    const { rejection } = await deliver(JSON.stringify(report({ relay: 'stranger' })), { relay: 'stranger' });
    figures.add('forgedReports');
    figures.add('inputs');
    expect(rejection?.field).toBe('relay');
    expect(await storedRelays()).toBe(stored);
    expect((await db.collection('relays').doc('stranger').get()).exists).toBe(false);
  });

  it("relay far's own report, listing local's instances and results, writes only under relays/far", async () => {
    const local = JSON.parse(await storedRelays()) as Record<string, unknown>;
    const copy = report({ relay: 'far', providers: [{ name: 'far-proc', type: 'process', ok: true, message: 'ok' }] });
    const { rejection } = await deliver(JSON.stringify(copy), { relay: 'far' });
    figures.add('inputs');
    expect(rejection).toBeUndefined();
    const after = JSON.parse(await storedRelays()) as Record<string, unknown>;
    for (const [key, value] of Object.entries(local)) expect(after[key], key).toEqual(value);
    expect(Object.keys(after).filter((k) => !(k in local))).toEqual([
      'far',
      'far/instances/ep-a-1',
      'far/instances/ep-b-1',
    ]);
    // local's provider reads relays/local only: its pending command is still pending.
    expect(after['local/commands/ep-c-1']).toMatchObject({ done: false });
  });
});

describe('guarantee: a report counts only when signed by a key of the relay it names', () => {
  const forged = () =>
    JSON.stringify(
      report({
        instances: [],
        results: [{ commandId: 'c-1', provider: 'local', name: 'ep-c-1', kind: 'create', ok: true }],
      }),
    );
  it.each([
    ['unsigned', () => ({}), 'attributes.keyId'],
    [
      "signed with relay far's key (same key id)",
      (text: string) => signText(keyOf('far'), 'report', text),
      'attributes.signature',
    ],
    [
      'signed with a key local does not list',
      (text: string) => signText({ ...keyOf('local'), id: 'k0' }, 'report', text),
      'attributes.keyId',
    ],
    ['signed as a command', (text: string) => signText(keyOf('local'), 'command', text), 'attributes.signature'],
    [
      'altered after signing',
      (text: string) => signText(keyOf('local'), 'report', text.replace('"instances":[]', '"instances":[ ]')),
      'attributes.signature',
    ],
  ])('a report %s is rejected, logged naming %s, and changes nothing', async (_what, sign, field) => {
    const stored = await storedRelays();
    const text = forged();
    const { thrown, rejection } = await deliver(text, { relay: RELAY }, sign(text));
    figures.add('forgedReports');
    figures.add('inputs');
    expect(thrown).toBeUndefined();
    expect(rejection?.field).toBe(field);
    expect(await storedRelays()).toBe(stored);
  });

  it('during a rotation a report signed with the new key or the old one is applied', async () => {
    for (const index of [0, 1]) {
      const text = JSON.stringify(report({ results: [] }));
      const { rejection } = await deliver(text, { relay: RELAY }, signText(keyOf('local', index), 'report', text));
      figures.add('inputs');
      expect(rejection, `key ${keyOf('local', index).id}`).toBeUndefined();
    }
  });
});
