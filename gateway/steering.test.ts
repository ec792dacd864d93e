/**
 * The username grammar and the per-domain learning through a running gateway: real `proxy` servers
 * as the fleet (each dialling from its own 127.x address), a real target that bans some of them.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway, type GatewayOptions } from './server.js';
import {
  createMemoryFleetApi,
  curl,
  rawExchange,
  startTestProxy,
  startTestTarget,
  type MemoryFleetApi,
  type TestProxy,
  type TestTarget,
} from './testing.js';

let proxies: TestProxy[];
let target: TestTarget;
let fleet: MemoryFleetApi;
let gw: Gateway;

beforeAll(async () => {
  proxies = await Promise.all(['g1', 'g2', 'g3'].map((n, i) => startTestProxy(n, `127.0.0.${i + 2}`)));
  target = await startTestTarget();
});
afterAll(async () => {
  await Promise.all([...proxies.map((p) => p.close()), target.close()]);
});
afterEach(async () => {
  await gw?.close();
  target.banned.clear();
});

/** g1 and g2 egress in Germany (AS 3320), g3 in France (AS 64500). */
async function gateway(options: Partial<GatewayOptions> = {}) {
  const where = [
    { country: 'DE', asn: 3320 },
    { country: 'DE', asn: 3320 },
    { country: 'FR', asn: 64500 },
  ];
  fleet = createMemoryFleetApi(proxies.map((p, i) => ({ ...p.upstream, ...where[i] })));
  gw = await startGateway({ fleet: fleet.api, listen: { host: '127.0.0.1', port: 0 }, refreshMs: 60_000, ...options });
}
const as = (user: string) => gw.url.replace(/^http:\/\/[^:]+:/, `http://${encodeURIComponent(user)}:`);
const through = (user: string, extra: string[] = []) => curl(['-x', as(user), ...extra, target.url]);
const ipOf = (body: string) => (JSON.parse(body) as { ip: string }).ip;

describe('gateway grammar: on the listener', { timeout: 30_000 }, () => {
  it('routes by country and asn, for plain requests and CONNECT', async () => {
    await gateway();
    const u = gw.credentials.username;
    for (let i = 0; i < 3; i++) expect(ipOf((await through(`${u}-country-fr`)).body)).toBe('127.0.0.4');
    for (let i = 0; i < 3; i++)
      expect(['127.0.0.2', '127.0.0.3']).toContain(ipOf((await through(`${u}-asn-3320`, ['-p'])).body));
    expect(ipOf((await through(`${u}-session-t1-country-de-asn-3320`)).body)).toMatch(/^127\.0\.0\.[23]$/);
  });

  it('answers 407 naming the key for an unknown key, a bad value, or a value no proxy has', async () => {
    await gateway();
    const u = gw.credentials.username;
    for (const [user, key] of [
      [`${u}-sessid-x`, 'sessid'],
      [`${u}-country-zz`, 'country'],
      [`${u}-country-jp`, 'country'],
      [`${u}-provider-nowhere`, 'provider'],
      [`${u}-country-fr-asn-3320`, 'country, asn'],
    ] as const) {
      const plain = await through(user, ['-i']);
      expect(plain.status).toBe(407);
      expect(plain.body).toContain(`username key "${key}"`);
      expect(plain.body).toMatch(/Proxy-Authenticate: Basic realm="egress gateway"/i);
      const basic = Buffer.from(`${user}:${gw.credentials.password}`).toString('base64');
      const host = new URL(target.url).host;
      const tunnel = await rawExchange(
        gw.address.port,
        `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\nProxy-Authorization: Basic ${basic}\r\n\r\n`,
      );
      expect(tunnel).toMatch(/^HTTP\/1\.1 407 /);
      expect(tunnel).toContain(`username key "${key}"`);
    }
    // With a wrong password nothing about the grammar is said.
    const wrong = await curl(['-x', as(`${u}-sessid-x`).replace(/:[^:@]+@/, ':nope@'), target.url]);
    expect(wrong.status).toBe(407);
    expect(wrong.body).not.toContain('sessid');
    expect(target.seen.length).toBeGreaterThan(0);
  });

  it('a strict session (oneip-true) fails when its proxy is gone; a plain one moves', async () => {
    await gateway();
    const u = gw.credentials.username;
    const first = ipOf((await through(`${u}-session-s1-oneip-true`)).body);
    const loose = ipOf((await through(`${u}-session-s2`)).body);
    const gone = (ip: string) => proxies.find((p) => p.upstream.egressIp === ip)?.upstream.name;
    fleet.set(proxies.map((p) => p.upstream).filter((p) => p.name !== gone(first) && p.name !== gone(loose)));
    await gw.router.refresh();
    const strict = await through(`${u}-session-s1-oneip-true`);
    expect(strict.status).toBe(502);
    const moved = await through(`${u}-session-s2`);
    expect(moved.status).toBe(200);
    expect(ipOf(moved.body)).not.toBe(loose);
  });
});

describe('gateway learning: on the listener', { timeout: 30_000 }, () => {
  it('learns which proxies a domain bans: after a few requests every first attempt succeeds', async () => {
    await gateway({ banOn: [403] });
    target.banned.add('127.0.0.3');
    const u = gw.credentials.username;
    for (let i = 0; i < 10; i++) expect((await through(u)).status).toBe(200);
    const before = target.seen.length;
    for (let i = 0; i < 20; i++) expect((await through(u)).status).toBe(200);
    // One attempt per request: the banned proxy was never tried again.
    expect(target.seen.length - before).toBe(20);
    // Reported once a discovery after the ban still lists it (router.ts: no report from a stale list).
    await gw.router.refresh();
    expect(fleet.reports).toContainEqual({
      name: 'g2',
      report: expect.objectContaining({ reason: 'banned', target: '127.0.0.1' }) as unknown,
    });
    expect(gw.router.selector.upstreams()).toHaveLength(3);
  }, 30_000);
});
