/**
 * SOCKS5 on the gateway's listener: the wire parsing (RFC 1928, RFC 1929) case by case, every reply
 * code through a running gateway, and real clients (curl --socks5-hostname, Python requests over
 * socks5h://) tunnelled through real `proxy` servers standing in for fleet proxies.
 */
import { execFile } from 'node:child_process';
import net from 'node:net';
import { promisify } from 'node:util';
import { chromium } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS } from '../test/e2e/chromium.js';
import { startGateway, type Gateway, type GatewayOptions } from './server.js';
import { parseGreeting, parseRequest, parseUserPass, REPLY, reply, replyFor } from './socks5.js';
import {
  createMemoryFleetApi,
  startTestProxy,
  startTestTarget,
  type MemoryFleetApi,
  type TestProxy,
  type TestTarget,
} from './testing.js';

const run = promisify(execFile);
let proxies: TestProxy[];
let target: TestTarget;
let fleet: MemoryFleetApi;
let gw: Gateway;

beforeAll(async () => {
  proxies = await Promise.all(['s1', 's2'].map((n, i) => startTestProxy(n, `127.0.0.${i + 2}`)));
  target = await startTestTarget();
});
afterAll(async () => {
  await Promise.all([...proxies.map((p) => p.close()), target.close()]);
});
afterEach(async () => {
  await gw?.close();
});

async function gateway(options: Partial<GatewayOptions> = {}) {
  fleet = createMemoryFleetApi(proxies.map((p) => ({ ...p.upstream, country: 'FR', asn: 64500 })));
  gw = await startGateway({ fleet: fleet.api, listen: { host: '127.0.0.1', port: 0 }, refreshMs: 60_000, ...options });
}

const bytes = (...b: number[]) => Buffer.from(b);
const userPass = (user: string, pass: string) =>
  Buffer.concat([bytes(1, user.length), Buffer.from(user), bytes(pass.length), Buffer.from(pass)]);
const connectTo = (host: string, port: number, command = 1) =>
  Buffer.concat([bytes(5, command, 0, 3, host.length), Buffer.from(host), bytes(port >> 8, port & 255)]);

/** Writes each message in turn on one connection, and resolves with all bytes the gateway sent before closing. */
function exchange(messages: Buffer[], waitMs = 1500): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const s = net.connect(gw.address.port, '127.0.0.1', () => {
      for (const m of messages) s.write(m);
    });
    const timer = setTimeout(() => s.destroy(), waitMs);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.once('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks));
    });
    s.once('error', reject);
  });
}

/** The full exchange with the gateway's own credentials; resolves with the request's reply code. */
async function replyCode(request: Buffer, user = gw.credentials.username): Promise<number | undefined> {
  const out = await exchange([bytes(5, 1, 2), userPass(user, gw.credentials.password), request]);
  // [5, 2] method, [1, 0] auth ok, then [5, REP, …].
  expect([...out.subarray(0, 4)]).toEqual([5, 2, 1, 0]);
  return out[5];
}

describe('gateway socks5: parsing', () => {
  it.each([
    ['too short', bytes(5), { done: false }],
    ['methods still coming', bytes(5, 2, 0), { done: false }],
    ['SOCKS4', bytes(4, 1, 0), { done: true, error: 'not SOCKS5 (version 4)' }],
    ['no method', bytes(5, 0), { done: true, error: 'the greeting offers no method' }],
    ['two methods', bytes(5, 2, 0, 2), { done: true, value: { methods: [0, 2] }, length: 4 }],
  ])('greeting: %s', (_what, buf, expected) => {
    expect(parseGreeting(buf)).toEqual(expected);
  });

  it.each([
    ['partial', bytes(1, 3, 97), { done: false }],
    ['wrong version', bytes(5, 1, 97, 1, 98), { done: true, error: 'username/password version 5 (want 1)' }],
    ['empty password', bytes(1, 1, 97, 0), { done: true, value: { user: 'a', password: '' }, length: 4 }],
    [
      'user and password',
      userPass('u-session-x', 'p:w'),
      { done: true, value: { user: 'u-session-x', password: 'p:w' }, length: 17 },
    ],
  ])('RFC 1929: %s', (_what, buf, expected) => {
    expect(parseUserPass(buf)).toEqual(expected);
  });

  it.each([
    ['domain', connectTo('example.com', 443), { command: 1, host: 'example.com', port: 443 }],
    ['IPv4', bytes(5, 1, 0, 1, 10, 0, 0, 7, 0, 80), { command: 1, host: '10.0.0.7', port: 80 }],
    [
      'IPv6',
      bytes(5, 1, 0, 4, 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 187),
      { command: 1, host: '2001:db8::1', port: 443 },
    ],
    [
      'BIND',
      connectTo('a.example', 1, 2),
      { command: 2, host: 'a.example', port: 1, reply: REPLY.commandNotSupported },
    ],
    [
      'UDP ASSOCIATE',
      connectTo('a.example', 1, 3),
      { command: 3, host: 'a.example', port: 1, reply: REPLY.commandNotSupported },
    ],
    [
      'an unknown address type',
      bytes(5, 1, 0, 9, 1, 2, 3),
      { command: 1, host: '', port: 0, reply: REPLY.addressTypeNotSupported },
    ],
    [
      'a domain that is no host name',
      connectTo('a b', 80),
      { command: 1, host: 'a b', port: 0, reply: REPLY.hostUnreachable },
    ],
    ['port 0', connectTo('a.example', 0), { command: 1, host: 'a.example', port: 0, reply: REPLY.hostUnreachable }],
  ])('request: %s', (_what, buf, value) => {
    const parsed = parseRequest(buf);
    expect(parsed).toMatchObject({ done: true, value });
  });

  it('waits for the whole request, and refuses another version', () => {
    expect(parseRequest(connectTo('example.com', 443).subarray(0, 10))).toEqual({ done: false });
    expect(parseRequest(bytes(4, 1, 0, 1, 0, 0, 0, 0, 0, 0))).toEqual({
      done: true,
      error: 'request version 4 (want 5)',
    });
  });

  it.each([
    [undefined, REPLY.networkUnreachable],
    [{ kind: 'timeout' as const }, REPLY.ttlExpired],
    [{ kind: 'hop' as const }, REPLY.generalFailure],
    [{ kind: 'target' as const, status: 403 }, REPLY.notAllowed],
    [{ kind: 'target' as const, status: 404 }, REPLY.hostUnreachable],
    [{ kind: 'target' as const, status: 500 }, REPLY.connectionRefused],
  ])('a failed tunnel (%j) answers %i', (cause, code) => {
    expect(replyFor(cause)).toBe(code);
    expect([...reply(code)]).toEqual([5, code, 0, 1, 0, 0, 0, 0, 0, 0]);
  });
});

describe('gateway socks5: on the listener', { timeout: 30_000 }, () => {
  it('curl --socks5-hostname and Python requests over socks5h:// reach the target through a fleet proxy', async () => {
    await gateway();
    const socks = gw.url.replace(/^http:/, 'socks5h:');
    const { stdout } = await run('curl', [
      '-sS',
      '--max-time',
      '10',
      '--proxy',
      socks,
      target.url.replace('127.0.0.1', 'localhost'),
    ]);
    expect((JSON.parse(stdout) as { ip: string }).ip).toMatch(/^127\.0\.0\.[23]$/);
    const py = await run('/usr/bin/python3', [
      '-c',
      'import sys, requests; r = requests.get(sys.argv[2], proxies={"http": sys.argv[1], "https": sys.argv[1]}, timeout=10); print(r.status_code, r.text)',
      socks,
      target.url,
    ]);
    expect(py.stdout).toMatch(/^200 \{"ip":"127\.0\.0\.[23]"/);
    // No gateway credential reached the fleet proxy or the target.
    const seen = target.seen.at(-1) ?? {};
    expect(JSON.stringify(seen)).not.toContain(gw.credentials.password);
  });

  it('headless Chromium over socks5:// sends no credentials: served only from an allow-listed loopback address', async () => {
    await gateway({ socksNoAuthFrom: ['127.0.0.1'] });
    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      proxy: { server: `socks5://127.0.0.1:${gw.address.port}`, bypass: '<-loopback>' },
    });
    try {
      const page = await browser.newPage();
      const res = await page.goto(target.url.replace('127.0.0.1', 'localhost'));
      expect(res?.status()).toBe(200);
      expect((await page.locator('body').textContent()) ?? '').toMatch(/"ip":"127\.0\.0\.[23]"/);
      // The same port without the allow-list: the browser's no-auth greeting is refused.
      const port = gw.address.port;
      await gw.close();
      await gateway({ listen: { host: '127.0.0.1', port } });
      await expect(page.goto(target.url)).rejects.toThrow(/ERR_(SOCKS|PROXY)/);
    } finally {
      await browser.close();
    }
  }, 30_000);

  it('a session in the SOCKS username keeps one egress; the grammar refuses what no proxy has', async () => {
    await gateway();
    const socks = (user: string) => gw.url.replace(/^http:\/\/[^:]+:/, `socks5h://${user}:`);
    const ips = new Set<string>();
    for (let i = 0; i < 4; i++) {
      const { stdout } = await run('curl', [
        '-sS',
        '--max-time',
        '10',
        '--proxy',
        socks(`${gw.credentials.username}-session-k1`),
        target.url,
      ]);
      ips.add((JSON.parse(stdout) as { ip: string }).ip);
    }
    expect(ips.size).toBe(1);
    expect(await replyCode(connectTo('127.0.0.1', 80), `${gw.credentials.username}-country-de`)).toBe(REPLY.notAllowed);
    const fr = await run('curl', [
      '-sS',
      '--max-time',
      '10',
      '--proxy',
      socks(`${gw.credentials.username}-country-fr-asn-64500`),
      target.url,
    ]);
    expect(fr.stdout).toContain('"ip":"127.0.0.');
  });

  it('answers every refusal with its reply code', async () => {
    // A "proxy" that accepts and never answers: the tunnel times out.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    try {
      await gateway({ connectTimeoutMs: 300 });
      const port = new URL(target.url).port;
      expect(await replyCode(connectTo('127.0.0.1', Number(port)))).toBe(REPLY.succeeded);
      expect(await replyCode(connectTo('127.0.0.1', 1))).toBe(REPLY.connectionRefused);
      expect(await replyCode(connectTo('a.example', 80, 2))).toBe(REPLY.commandNotSupported);
      expect(await replyCode(connectTo('a.example', 80, 3))).toBe(REPLY.commandNotSupported);
      expect(await replyCode(bytes(5, 1, 0, 9, 1, 2, 3, 4))).toBe(REPLY.addressTypeNotSupported);
      expect(await replyCode(connectTo('bad host', 80))).toBe(REPLY.hostUnreachable);
      expect(await replyCode(connectTo('127.0.0.1', 80), `${gw.credentials.username}-provider-nowhere`)).toBe(
        REPLY.notAllowed,
      );
      const address = silent.address() as net.AddressInfo;
      const hanging = { ...proxies[0]!.upstream, name: 'silent', port: address.port };
      fleet.set([hanging]);
      // A domain of its own per step: a domain's list is fetched on first use, then kept 10 s (router.ts).
      await gw.router.refresh();
      expect(await replyCode(connectTo('ttl.example', 80))).toBe(REPLY.ttlExpired);
      fleet.set([{ ...hanging, name: 'dead', port: 1 }]);
      await gw.router.refresh();
      expect(await replyCode(connectTo('dead.example', 80))).toBe(REPLY.generalFailure);
      fleet.set([]);
      await gw.router.refresh();
      expect(await replyCode(connectTo('none.example', 80))).toBe(REPLY.networkUnreachable);
    } finally {
      silent.close();
    }
  });

  it('refuses broken greetings, wrong credentials and no-auth unless the client is allow-listed', async () => {
    await gateway();
    expect([...(await exchange([bytes(5, 0)]))]).toEqual([]);
    expect([...(await exchange([bytes(5, 1, 0)]))]).toEqual([5, 0xff]);
    expect([...(await exchange([bytes(5, 1, 2), userPass(gw.credentials.username, 'wrong')]))]).toEqual([5, 2, 1, 1]);
    expect([...(await exchange([bytes(5, 1, 2), bytes(5, 1, 97, 1, 98)]))]).toEqual([5, 2]);
    // A wrong key with the right password: refused at the RFC 1929 step (its status has no room for a reason).
    const wrongKey = await exchange([
      bytes(5, 1, 2),
      userPass(`${gw.credentials.username}-colour-red`, gw.credentials.password),
    ]);
    expect([...wrongKey]).toEqual([5, 2, 1, 1]);
    // A SOCKS4 client's first byte is 4: it is not SOCKS5, so the HTTP side answers 400.
    expect((await exchange([bytes(4, 1, 0, 80, 127, 0, 0, 1, 0)])).toString()).toMatch(/^HTTP\/1\.1 400/);
    await gw.close();
    await gateway({ socksNoAuthFrom: ['127.0.0.1'] });
    const out = await exchange([bytes(5, 1, 0), connectTo('127.0.0.1', Number(new URL(target.url).port))]);
    expect([...out.subarray(0, 4)]).toEqual([5, 0, 5, 0]);
    await expect(gateway({ socksNoAuthFrom: ['10.0.0.1'] })).rejects.toThrow(/not a loopback address/);
  });
});
