/** The Node agents: the gateway's selection and failover inside `http.get` / `https.get`, no endpoint. */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFleetAgent, createFleetHttpsAgent } from './agent.js';
import { FleetRouter } from './router.js';
import {
  createMemoryFleetApi,
  selfSignedCert,
  startTestProxy,
  startTestTarget,
  startTlsTarget,
  type TestProxy,
  type TestTarget,
} from './testing.js';

let proxies: TestProxy[];
let target: TestTarget;
let tlsTarget: TestTarget;
let ca: string;
const dir = mkdtempSync(join(tmpdir(), 'gateway-agent-'));

beforeAll(async () => {
  proxies = await Promise.all(['a1', 'a2'].map((n, i) => startTestProxy(n, `127.0.0.${i + 5}`)));
  target = await startTestTarget();
  const cert = await selfSignedCert(dir);
  ca = cert.cert;
  tlsTarget = await startTlsTarget(cert);
});
afterAll(async () => {
  await Promise.all([...proxies.map((p) => p.close()), target.close(), tlsTarget.close()]);
  rmSync(dir, { recursive: true, force: true });
});

function get(mod: typeof http | typeof https, url: string, options: https.RequestOptions): Promise<string> {
  return new Promise((resolve, reject) => {
    mod
      .get(url, options, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.once('end', () => resolve(body));
      })
      .once('error', reject);
  });
}

describe('fleet agents', () => {
  it('http: each request leaves through the next proxy; a dead proxy is passed over', async () => {
    const s = net.createServer();
    await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
    const deadPort = (s.address() as net.AddressInfo).port;
    await new Promise<void>((r) => s.close(() => r()));
    const fleet = createMemoryFleetApi([
      { ...proxies[0]!.upstream, name: 'a0-dead', port: deadPort },
      ...proxies.map((p) => p.upstream),
    ]);
    const router = new FleetRouter({ fleet: fleet.api });
    await router.start();
    const agent = createFleetAgent(router);
    const ips = new Set<string>();
    for (let i = 0; i < 4; i++) ips.add((JSON.parse(await get(http, target.url, { agent })) as { ip: string }).ip);
    router.stop();
    expect([...ips].sort()).toEqual(['127.0.0.5', '127.0.0.6']);
    expect((await router.metrics.all.totals()).get('a0-dead')?.failed).toBeGreaterThan(0);
  });

  it('https: TLS to the target inside the tunnel, verified against its certificate; sessions stick', async () => {
    const fleet = createMemoryFleetApi(proxies.map((p) => p.upstream));
    const router = new FleetRouter({ fleet: fleet.api });
    await router.start();
    const agent = createFleetHttpsAgent(router, { session: 's' });
    const ips = new Set<string>();
    for (let i = 0; i < 3; i++)
      ips.add((JSON.parse(await get(https, tlsTarget.url, { agent, ca })) as { ip: string }).ip);
    await expect(get(https, tlsTarget.url, { agent: createFleetHttpsAgent(router) })).rejects.toThrow(
      /self-signed|certificate/,
    );
    router.stop();
    expect(ips.size).toBe(1);
  });
});
