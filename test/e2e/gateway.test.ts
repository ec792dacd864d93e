/**
 * The gateway on the real local stack with the clients users bring: curl (plain and -p CONNECT to
 * HTTPS), Python requests, a Scrapy crawl of 50 pages, headless Chromium; sticky sessions across
 * a killed proxy process, ban → report → retry, and no gateway credential reaching the target.
 */
import { execFile } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoveryListSchema, type ApiDiscovered } from '../../shared/api/schema.js';
import { selfSignedCert, startTestTarget, startTlsTarget, type TestTarget } from '../../gateway/testing.js';
import { fingerprintOf } from '../../shared/tls/pinned.js';
import { pinnedCurlArgs, presentedCertificate } from '../support/pinned-proxy.js';
import { eventually } from '../support/eventually.js';
import {
  clientEnv,
  curl,
  curlSocks,
  pythonRequests,
  requestsPerProxy,
  scrapyCrawl,
  startCliGateway,
  type CliGateway,
} from './gateway/clients.js';
import { CHROMIUM, CHROMIUM_ARGS } from './chromium.js';
import { startLocalStack, type RunningStack } from './stack.js';

const OFFSET = 800;
const dir = mkdtempSync(join(tmpdir(), 'egress-e2e-gateway-'));
let stack: RunningStack;
let site: TestTarget;
let tlsSite: TestTarget;
let ca = '';
let cli: CliGateway;
/** The proxy whose process the session test killed (it is being replaced meanwhile). */
let killed = '';

const ipOf = (body: string) => (JSON.parse(body) as { ip: string }).ip;
const withUser = (url: string, user: string) => url.replace(/^http:\/\/([^:]+):/, `http://${user}:`);
const userOf = (url: string) => decodeURIComponent(/^http:\/\/([^:]+):/.exec(url)?.[1] ?? '');

/** The Ready proxies as discovery lists them (the gateway's own view, with the stack gateway's token). */
async function discovery(): Promise<ApiDiscovered[]> {
  const env = stack.localEnv();
  const res = await fetch(`${env['EGRESS_API_URL']}/v1/discovery`, {
    headers: { authorization: `Bearer ${env['EGRESS_DISCOVER_TOKEN']}` },
  });
  return discoveryListSchema.parse(await res.json());
}

/** The PID of a proxy's process, from the process backends' instance records (`relay-state/<provider>`). */
function pidOf(proxy: string): number {
  const dirs = ['local', 'local-b'].map((p) => join(stack.home, 'relay-state', p, 'instances'));
  for (const instances of dirs.filter((d) => existsSync(d))) {
    for (const file of readdirSync(instances)) {
      const record = JSON.parse(readFileSync(join(instances, file), 'utf8')) as { proxy: string; pid: number };
      if (record.proxy === proxy) return record.pid;
    }
  }
  throw new Error(`no instance record for ${proxy} in ${dirs.join(', ')}`);
}

beforeAll(async () => {
  // No echo map (infra/local/echo-map.ts): discovery's egress IPs are then the 127.x addresses the
  // test's own sites see, which the tests below compare (egress-verify.test.ts covers the map).
  stack = await startLocalStack({ EGRESS_PORT_OFFSET: String(OFFSET), EGRESS_ECHO_MAP: '' });
  site = await startTestTarget({ pages: 50 });
  const cert = await selfSignedCert(dir);
  ca = cert.certFile;
  tlsSite = await startTlsTarget(cert);
  cli = await startCliGateway(stack.home, [
    '--listen',
    '127.0.0.1:0',
    '--ban-on',
    '403',
    '--metrics',
    '127.0.0.1:0',
    '--socks-no-auth',
    '127.0.0.1',
  ]);
});

afterAll(async () => {
  await cli?.stop();
  await Promise.all([site?.close(), tlsSite?.close()]);
  if (stack && stack.process.exitCode === null) await stack.interrupt();
  rmSync(dir, { recursive: true, force: true });
});

describe('e2e: fleet proxies through their TLS listeners, https:// proxy URLs', () => {
  /** Ready entries with a pinned TLS listener, and the SPKI hash curl and Chromium pin. */
  const secureEntries = async () => {
    const entries = (await discovery()).filter((e) => e.tlsUrl && e.tlsFingerprint);
    return Promise.all(
      entries.map(async (e) => {
        const url = new URL(e.tlsUrl ?? '');
        const cert = await presentedCertificate(url.hostname, Number(url.port), e.tlsFingerprint ?? undefined);
        return { ...e, tlsUrl: e.tlsUrl ?? '', cert };
      }),
    );
  };

  it('discovery gives every local proxy a tlsUrl whose certificate is the fingerprint it publishes', async () => {
    const entries = await eventually(async () => {
      const all = await discovery();
      const secure = await secureEntries();
      expect(all.length).toBeGreaterThan(0);
      expect(secure.length).toBe(all.length);
      return secure;
    }, 60_000);
    for (const e of entries) {
      expect(e.tlsUrl).toMatch(/^https:\/\/[^:]+:[^@]+@127\.0\.0\.1:\d+$/);
      expect(fingerprintOf(e.cert.raw)).toBe(e.tlsFingerprint);
    }
  });

  it('curl, Python requests and Chromium reach http and https sites through an https:// proxy URL', async () => {
    const [entry] = await secureEntries();
    if (!entry) throw new Error('no proxy with a TLS listener');
    const spki = createHash('sha256')
      .update(entry.cert.publicKey.export({ type: 'spki', format: 'der' }))
      .digest('base64');

    // curl: only the pinned certificate trusted (curl 7.88 ignores --proxy-pinnedpubkey), plain and CONNECT.
    const url = new URL(entry.tlsUrl);
    const proxy = { host: url.hostname, port: Number(url.port), auth: `${url.username}:${url.password}` };
    const pinned = await pinnedCurlArgs(proxy, entry.cert, join(dir, 'proxy.pem'));
    const plain = await curl(entry.tlsUrl, site.url + 'page/4', pinned);
    expect(plain.status).toBe(200);
    expect(ipOf(plain.body)).toBe(entry.egressIp);
    const tunnel = await curl(entry.tlsUrl, tlsSite.url, [...pinned, '--cacert', ca]);
    expect(tunnel.status).toBe(200);
    // Another certificate trusted: curl refuses the listener before it sends the credentials.
    const other = new X509Certificate(readFileSync(ca));
    const impostor = await pinnedCurlArgs(proxy, other, join(dir, 'other.pem'));
    await expect(curl(entry.tlsUrl, site.url, impostor)).rejects.toThrow(/SSL certificate problem/);

    // Python requests (urllib3's HTTPS proxy support): verification off for the self-signed proxy.
    const [s1, ip1, s2] = (await pythonRequests(entry.tlsUrl, site.url + 'page/5', tlsSite.url, 'false')) as [
      number,
      string,
      number,
    ];
    expect([s1, s2]).toEqual([200, 200]);
    expect(ip1).toBe(entry.egressIp);

    // Chromium: an https proxy whose key is trusted by its SPKI hash.
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: [...CHROMIUM_ARGS, `--ignore-certificate-errors-spki-list=${spki}`],
      proxy: {
        server: `https://${url.host}`,
        username: decodeURIComponent(url.username),
        password: decodeURIComponent(url.password),
        bypass: '<-loopback>',
      },
    });
    try {
      const page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
      for (const target of [site.url + 'page/6', tlsSite.url]) {
        const res = await page.goto(target);
        expect(res?.status()).toBe(200);
        expect(ipOf((await page.locator('body').textContent()) ?? '')).toBe(entry.egressIp);
      }
    } finally {
      await browser.close();
    }
  });
});

describe('e2e: the gateway with real clients', () => {
  it('npm start prints a gateway URL and writes it to local.env; curl through it, plain and CONNECT to HTTPS', async () => {
    const url = stack.localEnv()['EGRESS_GATEWAY_URL'] ?? '';
    expect(url).toMatch(/^http:\/\/[^:]+:[^@]+@127\.0\.0\.1:\d+$/);
    expect(stack.output()).toContain(`gateway: ${url}`);
    const plain = await curl(url, site.url + 'page/1');
    expect(plain.status).toBe(200);
    expect(ipOf(plain.body)).toMatch(/^127\.[12]\./);
    const tunnel = await curl(url, tlsSite.url, ['-p', '--cacert', ca]);
    expect(tunnel.status).toBe(200);
    expect(ipOf(tunnel.body)).toMatch(/^127\.[12]\./);
    expect((await curl(url.replace(/:[^:@]+@/, ':wrong@'), site.url)).status).toBe(407);
  });

  it('Python requests: http and https through the gateway', async () => {
    const [s1, ip1, s2, ip2] = (await pythonRequests(cli.url, site.url + 'page/2', tlsSite.url, ca)) as [
      number,
      string,
      number,
      string,
    ];
    expect([s1, s2]).toEqual([200, 200]);
    expect(ip1).toMatch(/^127\.[12]\./);
    expect(ip2).toMatch(/^127\.[12]\./);
  });

  it('a Scrapy crawl of 50 pages succeeds, spread over several egress IPs', async () => {
    const ready = await discovery();
    const pages = await scrapyCrawl(dir, cli.url, site.url);
    expect(pages).toHaveLength(50);
    expect(pages.every((p) => p.status === 200)).toBe(true);
    const ips = new Set(pages.map((p) => p.ip));
    const distinctEgress = new Set(ready.map((r) => r.egressIp));
    expect(distinctEgress.size).toBeGreaterThanOrEqual(3);
    expect(ips.size).toBeGreaterThanOrEqual(3);
    for (const ip of ips) expect(distinctEgress.has(ip)).toBe(true);
  });

  it('headless Chromium with proxy credentials, http and https', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      proxy: {
        server: cli.url.replace(/\/\/[^@]+@/, '//'),
        username: userOf(cli.url),
        password: decodeURIComponent(/:([^:@]+)@/.exec(cli.url)?.[1] ?? ''),
        bypass: '<-loopback>',
      },
    });
    try {
      const page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
      for (const url of [site.url + 'page/3', tlsSite.url]) {
        const res = await page.goto(url);
        expect(res?.status()).toBe(200);
        expect(ipOf((await page.locator('body').textContent()) ?? '')).toMatch(/^127\.[12]\./);
      }
    } finally {
      await browser.close();
    }
  });

  it('gateway socks5: curl --socks5-hostname and Python requests over socks5h://, http and https', async () => {
    const { host } = new URL(cli.url);
    const credentials = `${userOf(cli.url)}:${decodeURIComponent(/:([^:@]+)@/.exec(cli.url)?.[1] ?? '')}`;
    const plain = await curlSocks(host, credentials, site.url.replace('127.0.0.1', 'localhost') + 'page/7');
    expect(plain.status).toBe(200);
    expect(ipOf(plain.body)).toMatch(/^127\.[12]\./);
    const secure = await curlSocks(host, credentials, tlsSite.url, ['--cacert', ca]);
    expect(secure.status).toBe(200);
    const wrong = await curlSocks(host, `${userOf(cli.url)}:wrong`, site.url).catch((err: Error) => err);
    expect(wrong).toBeInstanceOf(Error);
    const socks = cli.url.replace(/^http:/, 'socks5h:');
    const [s1, ip1, s2, ip2] = (await pythonRequests(socks, site.url + 'page/8', tlsSite.url, ca)) as unknown[];
    expect([s1, s2]).toEqual([200, 200]);
    expect(ip1).toMatch(/^127\.[12]\./);
    expect(ip2).toMatch(/^127\.[12]\./);
  });

  it('gateway socks5: headless Chromium over socks5:// without credentials (the loopback allow-list)', async () => {
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      proxy: { server: `socks5://${new URL(cli.url).host}`, bypass: '<-loopback>' },
    });
    try {
      const page = await (await browser.newContext({ ignoreHTTPSErrors: true })).newPage();
      for (const url of [site.url + 'page/9', tlsSite.url]) {
        const res = await page.goto(url);
        expect(res?.status()).toBe(200);
        expect(ipOf((await page.locator('body').textContent()) ?? '')).toMatch(/^127\.[12]\./);
      }
    } finally {
      await browser.close();
    }
  });

  it('gateway grammar: provider and session keys steer; an unknown key, or a value no proxy has, is a 407 naming it', async () => {
    const user = userOf(cli.url);
    // The sample fleet is all on the `local` provider.
    const egress = new Set((await discovery()).map((r) => r.egressIp));
    for (let i = 0; i < 4; i++) {
      const res = await curl(withUser(cli.url, `${user}-provider-local`), site.url + 'page/10');
      expect(res.status).toBe(200);
      expect(egress.has(ipOf(res.body))).toBe(true);
    }
    const sticky = new Set<string>();
    for (let i = 0; i < 4; i++)
      sticky.add(ipOf((await curl(withUser(cli.url, `${user}-session-g1-sesstime-5`), site.url + 'page/11')).body));
    expect(sticky.size).toBe(1);
    for (const [suffix, key] of [
      ['-sessid-x', 'sessid'],
      ['-country-zz', 'country'],
      ['-country-de', 'country'],
      ['-provider-local-b', 'provider'],
    ]) {
      const res = await curl(withUser(cli.url, `${user}${suffix}`), site.url);
      expect(res.status).toBe(407);
      expect(res.body).toContain(`username key "${key}"`);
    }
  });

  it('no gateway credential reaches the target, in plain requests or tunnels', () => {
    const secret = cli.url.replace(/^http:\/\/[^:]+:([^@]+)@.*$/, '$1');
    const basic = Buffer.from(`${userOf(cli.url)}:${decodeURIComponent(secret)}`).toString('base64');
    const seen = JSON.stringify([...site.seen, ...tlsSite.seen]);
    expect(site.seen.length + tlsSite.seen.length).toBeGreaterThan(50);
    expect(seen).not.toContain(decodeURIComponent(secret));
    expect(seen).not.toContain(basic);
    expect(seen).not.toMatch(/proxy-authorization/i);
  });

  it('a session stays on one egress until its proxy process is killed, then moves once', async () => {
    const session = withUser(cli.url, `${userOf(cli.url)}-session-k1`);
    const before = new Set<string>();
    for (let i = 0; i < 5; i++) before.add(ipOf((await curl(session, site.url + 'page/4')).body));
    expect(before.size).toBe(1);
    const ip = [...before][0];
    const proxy = (await discovery()).find((r) => r.egressIp === ip)?.name ?? '';
    expect(proxy).not.toBe('');
    killed = proxy;
    process.kill(pidOf(proxy), 'SIGKILL');
    const after: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await curl(session, site.url + 'page/5', i % 2 ? ['-p'] : []);
      expect(res.status).toBe(200);
      after.push(ipOf(res.body));
    }
    expect(new Set(after).size).toBe(1);
    expect(after[0]).not.toBe(ip);
  });

  it('a --ban-on status is reported with the target host and retried elsewhere', async () => {
    const ready = await discovery();
    const victim = ready.find((r) => r.egressIp && r.name !== killed)!;
    site.banned.add(victim.egressIp ?? '');
    for (let i = 0; i < 2 * ready.length + 2; i++) {
      const res = await curl(cli.url, site.url + 'page/6');
      expect(res.status).toBe(200);
      expect(ipOf(res.body)).not.toBe(victim.egressIp);
    }
    await eventually(
      async () => {
        const events = await stack.db.collection(`proxies/${victim.name}/events`).get();
        expect(events.docs.map((d) => String(d.get('reason')))).toContain('Report:banned');
      },
      15_000,
      500,
    );
    site.banned.clear();
  });

  it('serves usage per proxy on --metrics and prints a summary on Ctrl-C', async () => {
    const counts = await requestsPerProxy(cli.metricsUrl);
    expect([...counts.values()].reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(60);
    expect(counts.size).toBeGreaterThanOrEqual(3);
    expect(await cli.stop()).toBe(0);
    expect(cli.output()).toMatch(/stopped; usage per fleet proxy:\n {2}\S+: \d+ answered, \d+ banned, \d+ failed/);
  });
});

/** curl through `proxy` (plain, or CONNECT with `tunnel`), never throwing: the status (0 when curl failed) and body. */
function attempt(proxy: string, url: string, tunnel: boolean): Promise<{ status: number; body: string }> {
  const args = ['-sS', '--max-time', '10', '-w', '\n%{http_code}', '-x', proxy, ...(tunnel ? ['-p'] : []), url];
  return new Promise((resolve) => {
    execFile('curl', args, { encoding: 'utf8', env: clientEnv() }, (err, stdout, stderr) => {
      const at = stdout.lastIndexOf('\n');
      const status = err && at < 0 ? 0 : Number(stdout.slice(at + 1));
      resolve({ status: Number.isFinite(status) ? status : 0, body: `${stdout.slice(0, Math.max(at, 0))}${stderr}` });
    });
  });
}

// Last in the file: the refusals below count against 127.0.0.1 in the gateway's learning.
describe('fence: on the npm start stack, fleet proxies and the gateway never reach the control plane', () => {
  /** The stack's own listeners: the API, the Firestore and Pub/Sub emulators. */
  const controlPlane = () => {
    const env = stack.localEnv();
    return [
      env['EGRESS_API_URL'] ?? '',
      `http://${env['FIRESTORE_EMULATOR_HOST']}/`,
      `http://${env['PUBSUB_EMULATOR_HOST']}/`,
    ];
  };
  /**
   * A fleet proxy's URL with its credentials, as discovery hands it out: not the one the session
   * test killed, which discovery may still list at its old address while it is replaced: through
   * it nothing connects, so its refusals would pass without showing the fence.
   */
  const fleetProxy = async () => {
    const found = (await discovery()).find((p) => p.name !== killed);
    if (!found) throw new Error('discovery lists no proxy');
    return found.url;
  };

  it('the stack loaded a kernel fence for its proxies (it runs as root here)', () => {
    expect(process.getuid?.()).toBe(0);
    expect(stack.output()).not.toContain('run without a kernel fence');
  });

  it.each([
    ['plain', false],
    ['CONNECT', true],
  ])(
    '%s: a fleet proxy refuses the API and the emulators, and reaches an ordinary loopback server',
    async (_kind, tunnel) => {
      const proxy = await fleetProxy();
      for (const url of controlPlane()) {
        const res = await attempt(proxy, url, tunnel);
        // tinyproxy answers 500 "Unable to connect" to a plain request the kernel refused, and to a
        // CONNECT 403 (ConnectPort) or 500; nothing of the API's or the emulators' own answers.
        expect([0, 403, 500], `${url}: ${res.status} ${res.body.slice(0, 200)}`).toContain(res.status);
      }
      const ordinary = await attempt(proxy, site.url + 'page/7', tunnel);
      expect(ordinary.status).toBe(200);
    },
  );

  it.each([
    ['plain', false],
    ['CONNECT', true],
  ])('%s: the gateway refuses the API and the emulators too', async (_kind, tunnel) => {
    const gateway = stack.localEnv()['EGRESS_GATEWAY_URL'] ?? '';
    for (const url of controlPlane()) {
      const res = await attempt(gateway, url, tunnel);
      expect([0, 403, 500, 502, 503], `${url}: ${res.status} ${res.body.slice(0, 200)}`).toContain(res.status);
    }
  });
});
