/**
 * The CLI as a whole, in-process, against the real API on a local HTTP server
 * (test/support/api-server.ts) over the in-memory control plane (test/support/memory-fleet.ts):
 * output and exit codes. The proxies move only as the fleet's bus delivers.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { TOPICS } from '../shared/bus/topics.js';
import { PermanentError } from '../shared/errors.js';
import { startApiServer, type ApiServer } from '../test/support/api-server.js';
import { eventually } from '../test/support/eventually.js';
import { startMemoryFleet, type MemoryFleet } from '../test/support/memory-fleet.js';
import type { Io } from './commands.js';
import { run } from './run.js';

const FLEET = `apiVersion: egress.dev/v1
kind: Proxy
metadata: { name: r-1, labels: { team: demo } }
spec: { provider: local }
---
apiVersion: egress.dev/v1
kind: Proxy
metadata: { name: r-2 }
spec: { provider: local, placement: { bindAddress: 127.0.0.1 } }
`;

const TOKEN = 'sekret-for-the-cli-tests';
let fleet: MemoryFleet;
let api: ApiServer;
let dir: string;
beforeEach(async () => {
  fleet = await startMemoryFleet({ apiTokens: [TOKEN] });
  await fleet.checkHealth();
  api = await startApiServer(fleet);
  dir = mkdtempSync(join(tmpdir(), 'egress-cli-run-'));
  writeFileSync(join(dir, 'fleet.yaml'), FLEET);
});
afterEach(async () => {
  await api.close();
  expect(fleet.bus.errors).toEqual([]);
});

/** Runs `egress <line>` with the API configured through EGRESS_HOME/local.env, as the stack writes it. */
async function egress(line: string | string[], extra: Partial<Io> = {}) {
  const home = mkdtempSync(join(tmpdir(), 'egress-cli-home-'));
  writeFileSync(join(home, 'local.env'), `EGRESS_API_URL=${api.url}\nEGRESS_TOKEN=${TOKEN}\n`);
  let stdout = '';
  let stderr = '';
  const code = await run(typeof line === 'string' ? line.split(' ').filter(Boolean) : line, {
    stdout: { isTTY: false, write: (s) => void (stdout += s) },
    stderr: { write: (s) => void (stderr += s) },
    env: { EGRESS_HOME: home },
    cwd: dir,
    pollIntervalMs: 10,
    ...extra,
  });
  return { code, stdout, stderr };
}

async function applied() {
  expect((await egress('apply -f fleet.yaml')).code).toBe(0);
  await fleet.bus.deliver();
}

describe('egress', () => {
  it('apply -f sends every document and says each was accepted', async () => {
    const r = await egress('apply -f fleet.yaml');
    expect(r).toEqual({ code: 0, stdout: 'proxy/r-1 accepted\nproxy/r-2 accepted\n', stderr: '' });
    const puts = api.requests.filter((q) => q.method === 'PUT');
    expect(puts.map((q) => [q.url, q.authorized])).toEqual([
      ['/v1/proxies/r-1', true],
      ['/v1/proxies/r-2', true],
    ]);
  });

  it('apply -f --wait returns 0 once all are Ready', async () => {
    fleet.bus.autoDeliver();
    const r = await egress('apply -f fleet.yaml --wait');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/proxy\/r-1 Ready\n/);
    expect(r.stdout).toMatch(/proxy\/r-2 Ready\n/);
  });

  it('apply --wait exits 1 with the condition when a proxy fails', async () => {
    fleet.backend.fail = (op) =>
      op === 'create' ? new PermanentError('no such zone', 'spec.placement.zone') : undefined;
    fleet.bus.autoDeliver();
    const r = await egress('apply -f fleet.yaml --wait --timeout 10s');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: proxy\/r-\d is Failed: PermanentError: spec.placement.zone: no such zone\n$/);
  });

  it('a bad file exits 1 naming the file, document and field, before any request', async () => {
    writeFileSync(join(dir, 'bad.yaml'), FLEET.replace('name: r-2', 'name: R_2'));
    const r = await egress('apply -f bad.yaml');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: bad.yaml: documents\[1\]\.metadata\.name: must be a DNS-1123 label/);
    expect(api.requests).toEqual([]);
    expect((await egress('apply -f missing.yaml')).stderr).toMatch(/^error: cannot read missing.yaml: ENOENT/);
    writeFileSync(join(dir, 'empty.yaml'), '# nothing\n');
    expect(await egress('apply -f empty.yaml')).toMatchObject({
      code: 1,
      stderr: 'error: empty.yaml: no Proxy or ProxyPool documents\n',
    });
  });

  it('apply reads stdin for -f -', async () => {
    const r = await egress('apply -f -', { readFile: (p) => (p === '-' ? FLEET : '') });
    expect(r.stdout).toBe('proxy/r-1 accepted\nproxy/r-2 accepted\n');
  });

  it('API errors print error: <message> with the field and exit 1; other documents still go', async () => {
    await applied();
    writeFileSync(join(dir, 'moved.yaml'), FLEET.replace('provider: local }', 'provider: elsewhere }'));
    const r = await egress('apply -f moved.yaml');
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'error: proxy/r-1: spec.provider is immutable: proxy "r-1" uses provider "local"; delete it first\n',
    );
    expect(r.stdout).toBe('proxy/r-2 accepted\n');
  });

  it('unknown flags and verbs exit 2 with usage on stderr, without calling the API', async () => {
    for (const line of ['get proxies --frobnicate', 'launch', 'describe proxy', 'get proxies -o xml']) {
      const r = await egress(line);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(/^error: .+\nRun 'egress --help' for usage\.\n$/);
    }
    expect(api.requests).toEqual([]);
    const help = await egress('--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: egress');
    const bare = await egress([]);
    expect(bare.code).toBe(2);
    expect(bare.stderr).toContain('Usage: egress');
  });

  it('get proxies prints a table, -o json parses, filters reach the API', async () => {
    await applied();
    const table = await egress('get proxies');
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME +PROVIDER +PHASE +ADDRESS +AGE$/);
    expect(table.stdout).toMatch(/^r-1 +local +Ready +127\.0\.0\.1:\d+ +\d+s$/m);
    const json = await egress('get proxies -o json --provider local --phase Ready -l team=demo');
    expect(JSON.parse(json.stdout)).toMatchObject({
      items: [{ metadata: { name: 'r-1' }, status: { phase: 'Ready' } }],
    });
    expect(api.requests.at(-1)?.url).toBe('/v1/proxies?phase=Ready&provider=local&label=team%3Ddemo');
    expect(parse((await egress('get proxies -o yaml')).stdout)).toHaveProperty('items.1.metadata.name', 'r-2');
    expect((await egress('get proxies --phase Failed')).stderr).toBe('No proxies found.\n');
  });

  it('get proxy NAME shows one; a missing one exits 1', async () => {
    await applied();
    const r = await egress('get proxy r-2 -o json');
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'Proxy', metadata: { name: 'r-2' } });
    expect(JSON.parse(r.stdout)).not.toHaveProperty('events');
    expect(await egress('get proxy nope')).toMatchObject({ code: 1, stderr: 'error: proxy "nope" not found\n' });
  });

  it('describe proxy shows conditions and events', async () => {
    await applied();
    const r = await egress('describe proxy r-1');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Conditions:\n {2}Type +Status +Reason +Age +Message\n/m);
    expect(r.stdout).toMatch(/^ {2}Ready +True +Ready +\d+s +proxy is ready$/m);
    expect(r.stdout).toMatch(
      /^Events:\n(.*\n)* {2}Normal +Accepted +\d+s +request m-\d+ applied\n(.*\n)* {2}Normal +Ready /m,
    );
  });

  it('what the API sends is printed without control characters: an event cannot recolour or rewrite the terminal', async () => {
    await applied();
    const message = 'a\x1b[31mred\x1b[0m \x1b]0;title\x07line\rover\x9b2Jwritten\x00 end';
    await fleet.proxies.addEvent('r-1', { at: new Date().toISOString(), type: 'Warning', reason: 'Odd', message }, 50);
    const r = await egress('describe proxy r-1');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^ {2}Warning +Odd +\d+s +ared lineover2Jwritten end$/m);
    expect(r.stdout).not.toMatch(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/);
  });

  it('delete proxy --wait returns when it is gone; a missing one exits 1', async () => {
    await applied();
    fleet.bus.autoDeliver();
    const r = await egress('delete proxy r-2 --wait');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/deletion accepted\n(.*\n)*proxy\/r-2 gone\n$/);
    expect(await fleet.proxies.get('r-2')).toBeUndefined();
    expect(await egress('delete proxy r-2')).toMatchObject({
      code: 1,
      stderr: 'error: proxy/r-2: proxy "r-2" not found\n',
    });
  });

  it('discover prints URLs by default and JSON on request, passing the filters', async () => {
    await applied();
    const urls = await egress('discover');
    const url = async (name: string) => {
      const creds = await fleet.proxies.credentials(name);
      const address = (await fleet.proxies.get(name))?.doc.status.address ?? '';
      expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
      return `http://${creds?.username ?? ''}:${creds?.password ?? ''}@${address}`;
    };
    expect(urls.stdout).toBe(`${await url('r-1')}\n${await url('r-2')}\n`);
    const json = await egress('discover -o json --label team=demo --max-latency-ms 50 --distinct --limit 1 --random');
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ name: 'r-1', provider: 'local' })]);
    expect(api.requests.at(-1)?.url).toBe(
      '/v1/discovery?label=team%3Ddemo&maxLatencyMs=50&distinct=true&limit=1&order=random&format=json',
    );
    await egress('discover --pool crawl --for shop.example.com');
    expect(api.requests.at(-1)?.url).toBe('/v1/discovery?pool=crawl&for=shop.example.com&format=urls');
  });

  it('report proxy sends the report and says what it did; bad flags exit 2, a missing proxy exits 1', async () => {
    await applied();
    const banned = await egress('report proxy r-1 --reason banned');
    expect(banned).toEqual({
      code: 0,
      stdout: 'proxy/r-1 banned: reported; the instance is banned and will be replaced\n',
      stderr: '',
    });
    const targeted = await egress([
      'report',
      'proxy',
      'r-2',
      '--reason',
      'blocked',
      '--target',
      'Shop.Example.com',
      '--detail',
      'a block page',
    ]);
    expect(targeted).toMatchObject({ code: 0, stdout: 'proxy/r-2 blocked for shop.example.com: reported\n' });
    // What the API recorded of it: one report event carrying the reason, the target and the detail.
    const reported = (await fleet.proxies.events('r-2')).filter((e) => e.reason.startsWith('Report:'));
    expect(reported.map((e) => [e.reason, e.message])).toEqual([
      [
        'Report:blocked',
        expect.stringMatching(/^reported blocked for shop\.example\.com by caller \w+: a block page$/),
      ],
    ]);
    expect(api.requests.filter((q) => q.method === 'POST').map((q) => q.url)).toEqual([
      '/v1/proxies/r-1/reports',
      '/v1/proxies/r-2/reports',
    ]);
    for (const line of [
      'report proxy r-1',
      'report proxy r-1 --reason slow',
      'report proxy r-1 --reason banned --target https://x.example/',
      'report proxy --reason banned',
      'report proxy r-1 --reason banned --wait',
      'report provider local --reason banned',
    ]) {
      const r = await egress(line);
      expect(r.code, line).toBe(2);
      expect(r.stderr, line).toMatch(/^error: /);
    }
    expect(api.requests.filter((q) => q.method === 'POST')).toHaveLength(2);
    expect(await egress('report proxy nope --reason error')).toMatchObject({
      code: 1,
      stderr: 'error: proxy "nope" not found\n',
    });
  });

  it('get providers prints their health', async () => {
    const r = await egress('get providers');
    expect(r.stdout).toMatch(
      /^NAME +TYPE +STATUS +LATENCY +LAST-CHECK +MESSAGE\nlocal +process +Healthy +0ms +\d+s +relay mem-relay reported 0s ago\n\nEgress location database: @ip-location-db\/geo-whois-asn-country-mmdb [\d.]+ \(published [\dT:Z-]+\); @ip-location-db\/asn [\d.]+ \(published [\dT:Z-]+\)\n$/,
    );
  });

  it('get proxies -w prints the table, then changed rows, until Ctrl-C', async () => {
    await applied();
    const controller = new AbortController();
    let stdout = '';
    const watching = egress('get proxies -w', {
      signal: controller.signal,
      stdout: { isTTY: false, write: (s) => void (stdout += s) },
    });
    const shown = (text: string) => eventually(() => expect(stdout).toContain(text), 5000, 10);
    await shown('r-2');
    await egress('delete proxy r-1');
    // The relay holds the delete until the watch has shown Deleting.
    fleet.bus.hold(TOPICS.relayCommands);
    await fleet.bus.deliver();
    await shown('Deleting');
    fleet.bus.release(TOPICS.relayCommands);
    await fleet.bus.deliver();
    await shown('Deleted');
    controller.abort();
    expect((await watching).code).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^NAME +PROVIDER/);
    expect(lines.slice(1).map((l) => l.split(/ {3,}/).slice(0, 3).join(' '))).toEqual([
      'r-1 local Ready',
      'r-2 local Ready',
      'r-1 local Deleting',
      'r-1 local Deleted',
    ]);
  });

  it('without a token the API error is printed with a hint; without any config it says what to do', async () => {
    const r = await egress('get proxies', { env: { EGRESS_API_URL: api.url } });
    expect(r).toMatchObject({
      code: 1,
      stderr: 'error: missing or invalid bearer token (no token: set EGRESS_TOKEN)\n',
    });
    const none = await egress('get proxies', { env: { EGRESS_HOME: dir } });
    expect(none.code).toBe(1);
    expect(none.stderr).toMatch(/^error: no API configured: set EGRESS_API_URL and EGRESS_TOKEN/);
  });

  it('an unreachable API exits 1 saying where it looked', async () => {
    const url = api.url;
    await api.close();
    const r = await egress('get proxies', { env: { EGRESS_API_URL: url, EGRESS_TOKEN: 'x' } });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(new RegExp(`^error: cannot reach the API at ${url}: .*ECONNREFUSED`));
    api = await startApiServer(fleet);
  });
});
