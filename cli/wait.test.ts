/**
 * The `--wait` loop against the real API (test/support/api-server.ts) over the in-memory control
 * plane (test/support/memory-fleet.ts): the proxies move only as the bus delivers.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseProxyDocuments } from '../shared/domain/documents.js';
import { PermanentError } from '../shared/errors.js';
import { TOPICS } from '../shared/bus/topics.js';
import { startApiServer, type ApiServer } from '../test/support/api-server.js';
import { eventually } from '../test/support/eventually.js';
import { startMemoryFleet, type MemoryFleet } from '../test/support/memory-fleet.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { conditionSchema, proxySchema } from '../shared/api/schema.js';
import { lastConditionMessage, readiness, waitFor, WaitError, type ProgressOutput, type WaitTarget } from './wait.js';

const TOKEN = 't0k-for-the-wait-tests';
let api: ApiServer | undefined;
let fleet: MemoryFleet | undefined;
afterEach(async () => {
  await api?.close();
  if (fleet) expect(fleet.bus.errors).toEqual([]);
  api = undefined;
  fleet = undefined;
});

async function setup(): Promise<{ fleet: MemoryFleet; api: ApiServer; client: ApiClient }> {
  fleet = await startMemoryFleet({ apiTokens: [TOKEN] });
  api = await startApiServer(fleet);
  return { fleet, api, client: createApiClient({ apiUrl: api.url, token: TOKEN, source: undefined }) };
}

function output(isTTY: boolean): ProgressOutput & { text: () => string } {
  let text = '';
  const write = (s: string) => void (text += s);
  return { isTTY, columns: 60, write, clearLine: () => write('\r\x1b[2K'), text: () => text };
}

const [one, two] = parseProxyDocuments(
  'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: w-1}\nspec: {provider: local}\n---\n' +
    'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: w-2, labels: {a: b}}\nspec: {provider: local, port: 3128}\n',
);
const ready = (): WaitTarget[] => [
  { name: 'w-1', until: 'ready', request: one! },
  { name: 'w-2', until: 'ready', request: two! },
];

describe('waitFor', () => {
  it('returns once every proxy is Ready, printing a plain line per change when not on a terminal', async () => {
    const { fleet, client } = await setup();
    for (const r of [one!, two!]) await client.applyProxy(r);
    // The relay does not take commands yet: the proxies stay Provisioning.
    fleet.bus.hold(TOPICS.relayCommands);
    await fleet.bus.deliver();
    const out = output(false);
    const waiting = waitFor(client, ready(), out, { timeoutMs: 10_000, intervalMs: 10 });
    // The relay starts once the first state was printed, so a loaded machine cannot skip past it.
    await eventually(() => expect(out.text()).toMatch(/^proxy\/w-1 (Pending|Provisioning) \(Creating: /m), 5000, 10);
    fleet.bus.release(TOPICS.relayCommands);
    fleet.bus.autoDeliver();
    await waiting;
    const lines = out.text().split('\n');
    expect(lines).toContain('proxy/w-1 Ready');
    expect(lines).toContain('proxy/w-2 Ready');
    expect(lines.some((l) => /^proxy\/w-1 (Pending|Provisioning) \(Creating: /.test(l))).toBe(true);
    expect(out.text()).not.toContain('\r');
  });

  it('keeps a single updating line on a terminal, then prints the final states', async () => {
    const { fleet, client } = await setup();
    for (const r of [one!, two!]) await client.applyProxy(r);
    fleet.bus.hold(TOPICS.relayCommands);
    fleet.bus.autoDeliver();
    const out = output(true);
    const waiting = waitFor(client, ready(), out, { timeoutMs: 10_000, intervalMs: 10 });
    await eventually(() => expect(out.text()).toContain('waiting ('), 5000, 10);
    fleet.bus.release(TOPICS.relayCommands);
    await waiting;
    const updates = out.text().split('\r\x1b[2K');
    expect(updates.length).toBeGreaterThan(2);
    for (const u of updates.slice(1, -1)) {
      expect(u).toMatch(/^waiting \(\d+s\): w-1 /);
      expect(u).not.toContain('\n');
      expect(u.length).toBeLessThanOrEqual(59);
    }
    expect(updates.at(-1)).toBe('proxy/w-1 Ready\nproxy/w-2 Ready\n');
  });

  it('does not take a Ready of the previous spec for the applied one', async () => {
    const { fleet, client } = await setup();
    await client.applyProxy(one!);
    await fleet.bus.deliver();
    expect((await fleet.proxies.get('w-1'))?.doc.status.phase).toBe('Ready');
    const changed = { ...one!, spec: { ...one!.spec, port: 4000 } };
    // The request is published, not delivered: the API still shows the previous spec, Ready.
    await client.applyProxy(changed);
    const out = output(false);
    const waiting = waitFor(client, [{ name: 'w-1', until: 'ready', request: changed }], out, {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    await eventually(() => expect(out.text()).toContain('proxy/w-1 apply not recorded yet'), 5000, 10);
    expect(out.text()).not.toContain('proxy/w-1 Ready');
    fleet.bus.autoDeliver();
    await waiting;
    expect(out.text()).toContain('proxy/w-1 Ready');
  });

  it('fails at once with the last condition when a proxy reaches Failed', async () => {
    const { fleet, client } = await setup();
    fleet.backend.fail = (op, name) =>
      op === 'create' && name === fleet.instance('w-2')
        ? new PermanentError('no such zone', 'spec.placement.zone')
        : undefined;
    for (const r of [one!, two!]) await client.applyProxy(r);
    fleet.bus.autoDeliver();
    const started = Date.now();
    const failure = waitFor(client, ready(), output(false), { timeoutMs: 10_000, intervalMs: 10 });
    await expect(failure).rejects.toThrow(WaitError);
    await expect(failure).rejects.toThrow('proxy/w-2 is Failed: PermanentError: spec.placement.zone: no such zone');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('times out naming what each pending proxy is waiting for', async () => {
    const { fleet, client } = await setup();
    await client.applyProxy(one!);
    fleet.bus.hold(TOPICS.relayCommands);
    fleet.bus.autoDeliver();
    await expect(
      waitFor(client, [{ name: 'w-1', until: 'ready', request: one! }], output(false), {
        timeoutMs: 300,
        intervalMs: 10,
      }),
    ).rejects.toThrow(/^timed out after 300ms: proxy\/w-1 Provisioning \(Creating: creating the instance\)$/);
  });

  it('waits until a deleted proxy is gone', async () => {
    const { fleet, client } = await setup();
    await client.applyProxy(one!);
    await fleet.bus.deliver();
    await client.deleteProxy('w-1');
    // The relay holds the delete until the wait has seen Deleting.
    fleet.bus.hold(TOPICS.relayCommands);
    fleet.bus.autoDeliver();
    const out = output(false);
    const waiting = waitFor(client, [{ name: 'w-1', until: 'gone' }], out, { timeoutMs: 10_000, intervalMs: 10 });
    await eventually(() => expect(out.text()).toContain('proxy/w-1 Deleting'), 5000, 10);
    fleet.bus.release(TOPICS.relayCommands);
    await waiting;
    expect(await fleet.proxies.get('w-1')).toBeUndefined();
    expect(out.text()).toMatch(/proxy\/w-1 Deleting[^\n]*\nproxy\/w-1 gone\n$/);
  });

  it('stops with an API error that waiting cannot cure', async () => {
    const { api } = await setup();
    const client = createApiClient({ apiUrl: api.url, token: 'wrong', source: undefined });
    await expect(waitFor(client, ready(), output(false), { timeoutMs: 10_000, intervalMs: 10 })).rejects.toThrow(
      'missing or invalid bearer token',
    );
  });

  it('rides out an API that is briefly unreachable', async () => {
    const { api, client } = await setup();
    await client.applyProxy(one!);
    const url = api.url;
    await api.close();
    const down = createApiClient({ apiUrl: url, token: TOKEN, source: undefined });
    await expect(
      waitFor(down, [{ name: 'w-1', until: 'ready', request: one! }], output(false), {
        timeoutMs: 200,
        intervalMs: 20,
      }),
    ).rejects.toThrow(/timed out after 200ms: proxy\/w-1 waiting \(cannot reach the API/);
  });
});

describe('lastConditionMessage', () => {
  const c = (type: string, status: string, reason: string, at: string) =>
    conditionSchema.parse({ type, status, reason, message: `${type} says`, lastTransitionTime: at });

  it('prefers the newest condition that is not True', () => {
    expect(
      lastConditionMessage([
        c('Provisioned', 'True', 'Created', '2030-01-01T00:00:03Z'),
        c('Healthy', 'False', 'ProbeFailed', '2030-01-01T00:00:02Z'),
        c('Ready', 'False', 'NotReady', '2030-01-01T00:00:01Z'),
      ]),
    ).toBe('ProbeFailed: Healthy says');
  });

  it("prefers the reconciler's conditions to informational ones", () => {
    expect(
      lastConditionMessage([
        c('Ready', 'False', 'NotReady', '2030-01-01T00:00:01Z'),
        c('EgressIp', 'False', 'Shared', '2030-01-01T00:00:05Z'),
      ]),
    ).toBe('NotReady: Ready says');
    expect(lastConditionMessage([c('EgressIp', 'False', 'Shared', '2030-01-01T00:00:05Z')])).toBe(
      'Shared: EgressIp says',
    );
  });

  it('falls back to the newest condition, and to nothing', () => {
    expect(lastConditionMessage([c('Ready', 'True', 'Ready', '2030-01-01T00:00:01Z')])).toBe('Ready: Ready says');
    expect(lastConditionMessage([])).toBeUndefined();
  });
});

describe('readiness of a proxy applied again after its creation stopped (NeverReachable)', () => {
  const message = 'never reachable: 3 instances in a row never passed a probe through 10.0.0.7:3128';
  const at = (generation: number, phase: string, stopped: boolean) =>
    proxySchema.parse({
      apiVersion: 'egress.dev/v1',
      kind: 'Proxy',
      metadata: { name: 'w-1', labels: {}, generation },
      spec: one!.spec,
      status: {
        phase,
        observedGeneration: generation,
        conditions: [{ type: 'Ready', status: 'False', reason: 'NeverReachable', message, lastTransitionTime: '' }],
        ...(stopped && { unreachable: { generation, stopped: true, instances: [], address: '', error: '' } }),
      },
    });

  it("is not this apply's failure until the apply moved the generation; a new stop is", () => {
    expect(readiness(at(1, 'Failed', true), one!, 1)).toMatchObject({ state: 'apply not recorded yet', done: false });
    expect(readiness(at(1, 'Failed', true), one!, 1).failed).toBeUndefined();
    expect(readiness(at(2, 'Provisioning', false), one!, 1)).toMatchObject({ state: 'Provisioning', done: false });
    expect(readiness(at(2, 'Failed', true), one!, 1)).toMatchObject({
      failed: true,
      why: `NeverReachable: ${message}`,
    });
    expect(readiness(at(1, 'Failed', true), one!, undefined)).toMatchObject({ failed: true });
  });
});
