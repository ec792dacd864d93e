/** The built `egress` CLI against the real local stack, run as a new user would run it. */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { proxyListSchema } from '../../shared/api/schema.js';
import { eventually } from '../support/eventually.js';
import { cliOf, startLocalStack, type RunningStack } from './stack.js';

const run = promisify(execFile);
const OFFSET = 600;
const FLEET = ['local-1', 'local-2', 'local-rotating'];
let stack: RunningStack;

/** `egress <args>` as a child process, configured only by the stack's local.env (EGRESS_HOME). */
const egress = cliOf(() => stack);

beforeAll(async () => {
  stack = await startLocalStack({ EGRESS_PORT_OFFSET: String(OFFSET), EGRESS_SAMPLES: 'none' });
});

afterAll(async () => {
  if (stack && stack.process.exitCode === null) await stack.interrupt();
});

describe('e2e: egress CLI', () => {
  it('the stack wrote the API URL, the admin token the CLI reads and the discover token its gateway runs with', async () => {
    const env = stack.localEnv();
    expect(env['EGRESS_API_URL']).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(env['EGRESS_TOKEN']).toMatch(/.+/);
    expect(env['EGRESS_DISCOVER_TOKEN']).toMatch(/.+/);
    const get = (path: string, token: string) =>
      fetch(`${env['EGRESS_API_URL']}${path}`, { headers: { authorization: `Bearer ${token}` } });
    const discover = env['EGRESS_DISCOVER_TOKEN'] ?? '';
    expect((await get('/v1/discovery', discover)).status).toBe(200);
    const refused = await get('/v1/proxies', discover);
    expect(refused.status).toBe(403);
    expect(await refused.json()).toMatchObject({
      error: { code: 'Forbidden', message: /needs a token with the "read" scope/ },
    });
    expect((await get('/v1/proxies', env['EGRESS_TOKEN'] ?? '')).status).toBe(200);
  });

  it('apply -f docs/samples/local-fleet.yaml --wait returns 0 when all are Ready', async () => {
    const r = await egress('apply', '-f', 'docs/samples/local-fleet.yaml', '--wait', '--timeout', '150s');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    for (const name of FLEET) {
      expect(r.stdout).toContain(`proxy/${name} accepted\n`);
      // Not a terminal: plain lines, the last one per proxy says Ready.
      expect(r.stdout).toContain(`proxy/${name} Ready\n`);
    }
    expect(r.stdout).not.toContain('\r');
  });

  it('get proxies -o json parses and shows the fleet Ready; the table is aligned', async () => {
    const r = await egress('get', 'proxies', '-o', 'json');
    expect(r.code).toBe(0);
    const list = proxyListSchema.parse(JSON.parse(r.stdout));
    expect(list.items.map((p) => [p.metadata.name, p.status.phase])).toEqual(FLEET.map((n) => [n, 'Ready']));
    const table = await egress('get', 'proxies', '-o', 'wide');
    const [header, ...rows] = table.stdout.trimEnd().split('\n');
    expect(header).toMatch(/^NAME +PROVIDER +PHASE +ADDRESS +AGE +EGRESS-IP +COUNTRY +ASN +LATENCY +INSTANCE$/);
    for (const row of rows)
      expect(row).toMatch(/^local-\S+ +local +Ready +127\.0\.0\.1:\d+ +\d+s +17\.0\.\d+\.\d+ +US +AS714 +\d+ms +ep-/);
    expect(rows.map((r) => r.indexOf('Ready'))).toEqual(rows.map(() => header?.indexOf('PHASE')));
  });

  it('discover -o urls prints URLs that work with curl -x', async () => {
    const r = await egress('discover', '-o', 'urls');
    expect(r.code).toBe(0);
    const urls = r.stdout.trimEnd().split('\n');
    expect(urls).toHaveLength(FLEET.length);
    const seen = new Set<string>();
    for (const url of urls) {
      expect(url).toMatch(/^http:\/\/[^:@]+:[^@]+@127\.0\.0\.1:\d+$/);
      const { stdout } = await run('curl', ['-sS', '--max-time', '5', '-x', url, `http://127.0.0.1:${8088 + OFFSET}/`]);
      // Each local proxy leaves from its own loopback address (the `local` provider's 127.1.0.0/16),
      // which the local echo answers as 17.0.0.0/16 (infra/local/echo-map.ts DEFAULT_ECHO_MAP).
      const { ip } = JSON.parse(stdout) as { ip: string };
      expect(ip).toMatch(/^17\.0\.\d+\.\d+$/);
      seen.add(ip);
    }
    expect(seen.size).toBe(urls.length);
    const json = await egress('discover', '-o', 'json', '--label', 'rotation=hourly');
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ name: 'local-rotating', provider: 'local' })]);
  });

  it('describe proxy local-1 shows conditions and events', async () => {
    const r = await egress('describe', 'proxy', 'local-1');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Name: +local-1$/m);
    expect(r.stdout).toMatch(/^Phase: +Ready$/m);
    expect(r.stdout).toMatch(/^Conditions:\n {2}Type +Status +Reason +Age +Message\n/m);
    for (const type of ['Provisioned', 'Healthy', 'Ready'])
      expect(r.stdout).toMatch(new RegExp(`^ {2}${type} +True `, 'm'));
    expect(r.stdout).toMatch(/^Events:\n {2}Type +Reason +Age +Message\n {2}-+ .*\n {2}(Normal|Warning) +\S+ +\d+\w /m);
  });

  it('get providers shows the local provider', async () => {
    const r = await egress('get', 'providers');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^NAME +TYPE +STATUS +LATENCY +LAST-CHECK +MESSAGE\nlocal +process +\w+/);
  });

  it('delete proxy local-2 --wait returns when it is gone', async () => {
    const r = await egress('delete', 'proxy', 'local-2', '--wait', '--timeout', '120s');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^proxy\/local-2 deletion accepted\n(.*\n)*proxy\/local-2 gone\n$/);
    expect(await egress('get', 'proxy', 'local-2')).toMatchObject({
      code: 1,
      stderr: 'error: proxy "local-2" not found\n',
    });
    const list = proxyListSchema.parse(JSON.parse((await egress('get', 'proxies', '-o', 'json')).stdout));
    expect(list.items.map((p) => p.metadata.name)).toEqual(['local-1', 'local-rotating']);
  });

  it('a proxy on local-b leaves from its own 127.2.x.y; reported banned, it comes back under its name with a new egress IP', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'egress-e2e-cli-')), 'b.yaml');
    writeFileSync(file, 'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: b-1}\nspec: {provider: local-b}\n');
    expect((await egress('apply', '-f', file, '--wait', '--timeout', '120s')).code).toBe(0);
    /** The egress IP the echo endpoint sees through b-1, once discovery hands it out (and its probed egressIp). */
    const measured = async () => {
      const found = z
        .array(z.object({ name: z.string(), url: z.string(), egressIp: z.string().nullable() }))
        .parse(JSON.parse((await egress('discover', '-o', 'json', '--provider', 'local-b')).stdout))
        .find((e) => e.name === 'b-1');
      if (!found) return undefined;
      const echo = `http://127.0.0.1:${8088 + OFFSET}/`;
      const { stdout } = await run('curl', ['-sS', '--max-time', '5', '-x', found.url, echo]);
      return { seen: (JSON.parse(stdout) as { ip: string }).ip, probed: found.egressIp };
    };
    // Discovery answers from a page read up to DISCOVERY_CACHE_MS ago, so b-1 may join its list a
    // moment after `apply --wait` saw it Ready.
    const before = await eventually(async () => {
      const now = await measured();
      expect(now?.seen, 'discovery lists b-1').toMatch(/^5\.9\.\d+\.\d+$/);
      return now;
    }, 10_000);
    expect(before?.probed).toBe(before?.seen);
    expect(await egress('report', 'proxy', 'b-1', '--reason', 'banned', '--detail', 'e2e')).toMatchObject({
      code: 0,
      stdout: 'proxy/b-1 banned: reported; the instance is banned and will be replaced\n',
    });
    // Waits for the replacement: discovery hands out b-1 again, leaving from another address.
    const after = await eventually(
      async () => {
        const now = await measured();
        expect(now?.seen, 'b-1 leaves from a new 5.9.x.y (its 127.2.x.y as the local echo maps it)').toMatch(
          /^5\.9\.\d+\.\d+$/,
        );
        expect(now?.seen, 'b-1 leaves from a new 5.9.x.y (its 127.2.x.y as the local echo maps it)').not.toBe(
          before?.seen,
        );
        expect(now?.probed, "the new instance's probed egress IP").toBe(now?.seen);
        return now;
      },
      90_000,
      1000,
    );
    expect(after?.seen).toMatch(/^5\.9\.\d+\.\d+$/);
    expect(after?.seen).not.toBe(before?.seen);
    const described = await egress('describe', 'proxy', 'b-1');
    expect(described.stdout).toMatch(/Report:banned/);
    expect(described.stdout).toMatch(/Replace:banned/);
  }, 150_000);

  it('a bad file exits 1 naming the document and the field, and applies nothing', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'egress-e2e-cli-')), 'bad.yaml');
    writeFileSync(
      file,
      [
        'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: bad-0}\nspec: {provider: local}',
        'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: Bad_1}\nspec: {provider: local}',
      ].join('\n---\n'),
    );
    const r = await egress('apply', '-f', file, '--wait');
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^error: .*bad\.yaml: documents\[1\]\.metadata\.name: must be a DNS-1123 label/);
    // A request sent after it is recorded (a proxy on a provider not configured: nothing to
    // provision); then bad-0, had it been sent before, would have had its chance to be recorded too.
    const marker = join(mkdtempSync(join(tmpdir(), 'egress-e2e-cli-')), 'marker.yaml');
    writeFileSync(
      marker,
      'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: bad-marker}\nspec: {provider: nope}\n',
    );
    expect((await egress('apply', '-f', marker)).code).toBe(0);
    await eventually(async () =>
      expect((await egress('get', 'proxy', 'bad-marker')).code, 'bad-marker recorded').toBe(0),
    );
    expect((await egress('get', 'proxy', 'bad-0')).code).toBe(1);
    expect((await egress('delete', 'proxy', 'bad-marker', '--wait', '--timeout', '60s')).code).toBe(0);
  });

  it('an API error prints error: <message> with the field and exits 1', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'egress-e2e-cli-')), 'moved.yaml');
    writeFileSync(
      file,
      'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: {name: local-1}\nspec: {provider: elsewhere}\n',
    );
    const r = await egress('apply', '-f', file);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: proxy\/local-1: spec\.provider/);
  });

  it('an unknown flag exits 2', async () => {
    const r = await egress('get', 'proxies', '--no-such-flag');
    expect(r).toMatchObject({ code: 2, stdout: '' });
    expect(r.stderr).toMatch(/^error: unknown flag: --no-such-flag\n/);
    expect((await egress('frobnicate')).code).toBe(2);
  });
});
