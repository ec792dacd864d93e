/** The `--wait` loop against a real local HTTP server speaking docs/api.md (test/fakes/egress-api.ts). */
import { afterEach, describe, expect, it } from 'vitest';
import { parseProxyDocuments } from '../shared/domain/documents.js';
import { startFakeApi, type FakeApi } from '../test/fakes/egress-api.js';
import { eventually } from '../test/support/eventually.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { conditionSchema } from '../shared/api/schema.js';
import { lastConditionMessage, waitFor, WaitError, type ProgressOutput, type WaitTarget } from './wait.js';

let api: FakeApi | undefined;
afterEach(async () => {
  await api?.close();
  api = undefined;
});

async function setup(lifecycle?: (name: string) => string[]): Promise<{ api: FakeApi; client: ApiClient }> {
  api = await startFakeApi({ token: 't0k', ...(lifecycle && { lifecycle }) });
  return { api, client: createApiClient({ apiUrl: api.url, token: 't0k', source: undefined }) };
}

function output(isTTY: boolean): ProgressOutput & { text: () => string } {
  let text = '';
  return { isTTY, columns: 60, write: (s) => void (text += s), text: () => text };
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
    const { api, client } = await setup();
    for (const r of [one!, two!]) await client.applyProxy(r);
    api.step();
    const out = output(false);
    const waiting = waitFor(client, ready(), out, { timeoutMs: 10_000, intervalMs: 10 });
    // Steps start once the first state was printed, so a loaded machine cannot skip past it.
    await eventually(() => expect(out.text()).toMatch(/^proxy\/w-1 (Pending|Provisioning) \(Creating: /m), 5000, 10);
    api.autoStep(30);
    await waiting;
    const lines = out.text().split('\n');
    expect(lines).toContain('proxy/w-1 Ready');
    expect(lines).toContain('proxy/w-2 Ready');
    expect(lines.some((l) => /^proxy\/w-1 (Pending|Provisioning) \(Creating: /.test(l))).toBe(true);
    expect(out.text()).not.toContain('\r');
  });

  it('keeps a single updating line on a terminal, then prints the final states', async () => {
    const { api, client } = await setup();
    for (const r of [one!, two!]) await client.applyProxy(r);
    api.autoStep(30);
    const out = output(true);
    await waitFor(client, ready(), out, { timeoutMs: 10_000, intervalMs: 10 });
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
    const { api, client } = await setup();
    await client.applyProxy(one!);
    api.step();
    api.step();
    api.step();
    expect(api.proxies.get('w-1')?.status.phase).toBe('Ready');
    const changed = { ...one!, spec: { ...one!.spec, port: 4000 } };
    await client.applyProxy(changed);
    const out = output(false);
    const waiting = waitFor(client, [{ name: 'w-1', until: 'ready', request: changed }], out, {
      timeoutMs: 10_000,
      intervalMs: 10,
    });
    await new Promise((r) => setTimeout(r, 100));
    expect(out.text()).toContain('proxy/w-1 apply not recorded yet');
    expect(out.text()).not.toContain('proxy/w-1 Ready');
    api.autoStep(30);
    await waiting;
    expect(out.text()).toContain('proxy/w-1 Ready');
  });

  it('fails at once with the last condition when a proxy reaches Failed', async () => {
    const { api, client } = await setup((name) => (name === 'w-2' ? ['Pending', 'Failed'] : ['Pending', 'Ready']));
    for (const r of [one!, two!]) await client.applyProxy(r);
    api.autoStep(20);
    const started = Date.now();
    const failure = waitFor(client, ready(), output(false), { timeoutMs: 10_000, intervalMs: 10 });
    await expect(failure).rejects.toThrow(WaitError);
    await expect(failure).rejects.toThrow('proxy/w-2 is Failed: PermanentError: spec.placement.zone: no such zone');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  it('times out naming what each pending proxy is waiting for', async () => {
    const { api, client } = await setup(() => ['Pending', 'Provisioning']);
    await client.applyProxy(one!);
    api.autoStep(20);
    await expect(
      waitFor(client, [{ name: 'w-1', until: 'ready', request: one! }], output(false), {
        timeoutMs: 300,
        intervalMs: 10,
      }),
    ).rejects.toThrow(/^timed out after 300ms: proxy\/w-1 Provisioning \(Creating: instance is provisioning\)$/);
  });

  it('waits until a deleted proxy is gone', async () => {
    const { api, client } = await setup();
    await client.applyProxy(one!);
    api.step();
    api.step();
    api.step();
    await client.deleteProxy('w-1');
    api.autoStep(30);
    const out = output(false);
    await waitFor(client, [{ name: 'w-1', until: 'gone' }], out, { timeoutMs: 10_000, intervalMs: 10 });
    expect(api.proxies.has('w-1')).toBe(false);
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
    const down = createApiClient({ apiUrl: url, token: 't0k', source: undefined });
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
