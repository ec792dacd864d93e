/** Distinct egress for process proxies: ranges, the source rule, and real processes seen by the echo endpoint. */
import { localEgressPolicy } from '../../../shared/config/egress-policy.js';
import { mkdtemp, realpath, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../../shared/logger.js';
import { startEchoServer, type EchoServer } from '../../../shared/probe/echo-server.js';
import { probeThroughProxy } from '../../../shared/probe/probe.js';
import type { InstanceSpec } from '../../../shared/providers/contract.js';
import { parseIpv4Range } from './egress.js';
import { createProcessBackend, stopAllInstances } from './index.js';
import { StateStore } from './state.js';
import { eventually } from '../../../test/support/eventually.js';

const logger = createLogger({ write: () => undefined });
const credentials = { username: 'user', password: 'egress-test-pw' };
let echo: EchoServer;
let stateDir: string;

const spec = (name: string): InstanceSpec => ({
  name,
  proxy: name,
  installationId: 'test',
  specHash: 'h',
  port: 0,
  placement: {},
  credentials,
});
const backendFor = (provider: string, range: string, ports: [number, number]) =>
  createProcessBackend({
    provider,
    installationId: 'test',
    stateDir,
    bindAddresses: ['127.0.0.1'],
    portRange: ports,
    logger,
    egressAddresses: range,
    egress: localEgressPolicy([]),
  });

/** The caller address the echo endpoint saw, through the proxy with an absolute URI (what `curl -x` does). */
function forwardedIp(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const auth = Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64');
    const headers = { host: new URL(echo.url).host, 'proxy-authorization': `Basic ${auth}` };
    const req = http.request({ host: '127.0.0.1', port, path: echo.url, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve((JSON.parse(body) as { ip: string }).ip));
    });
    req.on('error', reject);
    req.end();
  });
}
const tunnelledIp = async (port: number) =>
  (await probeThroughProxy({ host: '127.0.0.1', port, echoUrl: echo.url, timeoutMs: 3000, ...credentials })).egressIp;
const recordOf = async (name: string) => {
  const result = await new StateStore(await realpath(stateDir)).read(name);
  if (result.kind !== 'ok') throw new Error(`no state for ${name}`);
  return result.record;
};

beforeAll(async () => {
  echo = await startEchoServer();
  stateDir = await mkdtemp(path.join(os.tmpdir(), 'egress-process-egress-'));
}, 30_000);

afterAll(async () => {
  await stopAllInstances(stateDir);
  await rm(stateDir, { recursive: true, force: true });
  await echo.close();
}, 30_000);

describe('egress address rules', () => {
  it.each([
    ['127.1.0.0/16', { base: 0x7f010000, size: 65536 }],
    ['10.0.0.8/29', { base: 0x0a000008, size: 8 }],
    ['127.1.0.1/16', 'not the first address'],
    ['127.1.0.0', 'CIDR'],
    ['::1/128', 'CIDR'],
    ['127.0.0.0/4', '8 to 32'],
    ['127.1.0.0/30', { base: 0x7f010000, size: 4 }],
    ['127.1.0.0/31', 'a loopback range needs a prefix of /30 or shorter'],
    ['10.0.0.8/31', { base: 0x0a000008, size: 2 }],
  ])('parses %s', (cidr, want) => {
    const got = parseIpv4Range(cidr);
    if (typeof want === 'string') expect(got).toMatch(want);
    else expect(got).toEqual(want);
  });
});

describe('process proxies leave from their own address', { timeout: 30_000 }, () => {
  it('each proxy of each provider has its own egress IP, as the echo endpoint sees it (HTTP and CONNECT)', async () => {
    const a = backendFor('pa', '127.3.0.0/24', [23400, 23419]);
    const b = backendFor('pb', '127.4.0.0/24', [23420, 23439]);
    const one = await a.create(spec('ep-one'));
    const two = await a.create(spec('ep-two'));
    const three = await b.create(spec('ep-three'));
    expect((await recordOf('ep-one')).egressAddress).toBe('127.3.0.1');
    expect((await recordOf('ep-two')).egressAddress).toBe('127.3.0.2');
    expect((await recordOf('ep-three')).egressAddress).toBe('127.4.0.1');
    expect(await forwardedIp(one.port)).toBe('127.3.0.1');
    expect(await tunnelledIp(one.port)).toBe('127.3.0.1');
    expect(await forwardedIp(two.port)).toBe('127.3.0.2');
    expect(await tunnelledIp(three.port)).toBe('127.4.0.1');
  });

  it('a relay restart adopts each proxy with its address; a fresh instance gets a new one', async () => {
    const restarted = backendFor('pa', '127.3.0.0/24', [23400, 23419]);
    const adopted = await restarted.create(spec('ep-one'));
    expect((await recordOf('ep-one')).egressAddress).toBe('127.3.0.1');
    expect(await tunnelledIp(adopted.port)).toBe('127.3.0.1');

    // A process that died is started again with the address it had.
    process.kill((await recordOf('ep-one')).pid, 'SIGKILL');
    await eventually(
      async () => expect((await restarted.get('ep-one')).state, 'ep-one after kill -9').toBe('Terminated'),
      5000,
      20,
    );
    const again = await restarted.create(spec('ep-one'));
    expect(await tunnelledIp(again.port)).toBe('127.3.0.1');

    // Deleted and created again (a replacement): another address, even though 127.3.0.1 is free now.
    await restarted.delete('ep-one');
    const fresh = await restarted.create(spec('ep-one'));
    const ip = await tunnelledIp(fresh.port);
    expect(ip).toBe('127.3.0.3');
    expect(ip).not.toBe('127.3.0.1');
  });
});
