/**
 * Proxies with loopback egress addresses reach a target that is not on this host (a server in a
 * network namespace of the test's own: test/support/remote-target.ts, needs root) through their
 * backend's forwarder, and loopback targets still see each proxy's own address.
 */
import { localEgressPolicy } from '../../../shared/config/egress-policy.js';
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RetryableError } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/logger.js';
import { startEchoServer, type EchoServer } from '../../../shared/probe/echo-server.js';
import { probeThroughProxy } from '../../../shared/probe/probe.js';
import type { InstanceSpec } from '../../../shared/providers/contract.js';
import { startRemoteTarget, type RemoteTarget } from '../../../test/support/remote-target.js';
import { createProcessBackend, stopAllInstances } from './index.js';
import { awaitExit, isOurs } from './processes.js';
import { forwarderMarkers } from './proxy-config.js';
import { StateStore } from './state.js';

const logger = createLogger({ write: () => undefined });
const credentials = { username: 'user', password: 'forwarder-test-pw' };
const RANGE = '127.7.0.0/24';
let echo: EchoServer;
let remote: RemoteTarget;
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
const newBackend = (provider = 'pf', egressAddresses = RANGE, portRange: [number, number] = [23500, 23519]) =>
  createProcessBackend({
    provider,
    installationId: 'test',
    stateDir,
    bindAddresses: ['127.0.0.1'],
    portRange,
    logger,
    egressAddresses,
    egress: localEgressPolicy([]),
  });

/** A GET through the proxy with an absolute URI (what `curl -x` does): the status and the caller IP the target saw. */
function forward(port: number, url: string): Promise<{ status: number; ip?: string }> {
  return new Promise((resolve, reject) => {
    const auth = Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64');
    const headers = { host: new URL(url).host, 'proxy-authorization': `Basic ${auth}` };
    const req = http.request({ host: '127.0.0.1', port, path: url, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        resolve(status === 200 ? { status, ip: (JSON.parse(body) as { ip: string }).ip } : { status });
      });
    });
    req.on('error', reject);
    req.end();
  });
}
/** A CONNECT tunnel through the proxy and a GET inside it. */
const tunnel = (port: number, url: string) =>
  probeThroughProxy({ host: '127.0.0.1', port, echoUrl: url, timeoutMs: 5000, ...credentials });

const forwarderPid = async (): Promise<number> => {
  const store = new StateStore(await realpath(stateDir));
  return (JSON.parse(await readFile(store.forwarderPaths('pf').record, 'utf8')) as { pid: number }).pid;
};

beforeAll(async () => {
  [echo, remote] = await Promise.all([startEchoServer(), startRemoteTarget()]);
  stateDir = await mkdtemp(path.join(os.tmpdir(), 'egress-process-forwarder-'));
}, 30_000);

afterAll(async () => {
  await stopAllInstances(stateDir);
  await rm(stateDir, { recursive: true, force: true });
  await Promise.all([echo.close(), remote.close()]);
}, 30_000);

describe('a proxy with a loopback egress address', { timeout: 30_000 }, () => {
  it('reaches a target off this host with a plain GET and through a CONNECT tunnel', async () => {
    const proxy = await newBackend().create(spec('fw-one'));
    // The target sees the host's address on the way there: the forwarder connected, not 127.7.0.1.
    expect(await forward(proxy.port, remote.url)).toEqual({ status: 200, ip: remote.hostIp });
    expect(await tunnel(proxy.port, remote.url)).toMatchObject({ ok: true, egressIp: remote.hostIp });
  });

  it('still leaves from its own address towards this host', async () => {
    const backend = newBackend();
    const two = await backend.create(spec('fw-two'));
    const one = await backend.create(spec('fw-one'));
    expect(await forward(one.port, echo.url)).toEqual({ status: 200, ip: '127.7.0.1' });
    expect(await tunnel(two.port, echo.url)).toMatchObject({ ok: true, egressIp: '127.7.0.2' });
    const byName = echo.url.replace('127.0.0.1', 'localhost');
    expect(await forward(two.port, byName)).toEqual({ status: 200, ip: '127.7.0.2' });
  });

  it('has one forwarder, adopted after a relay restart, healed by the health check once killed', async () => {
    const pid = await forwarderPid();
    const restarted = newBackend();
    const health = await restarted.check();
    expect(health).toMatchObject({ ok: true });
    expect(health.message).toContain(`forwarder 127.7.0.0:23500 (pid ${pid})`);
    expect(await forwarderPid()).toBe(pid);

    const one = await restarted.create(spec('fw-one'));
    process.kill(pid, 'SIGKILL');
    await awaitExit(pid, forwarderMarkers('pf', await realpath(stateDir)));
    // Dead forwarder: the target is out of reach (tinyproxy answers 502 or closes the connection).
    const dead = await forward(one.port, remote.url).catch((err: unknown) => ({ status: 0, error: String(err) }));
    expect(dead).not.toMatchObject({ status: 200 });
    expect(await restarted.check()).toMatchObject({ ok: true });
    const healed = await forwarderPid();
    expect(healed).not.toBe(pid);
    expect(await forward(one.port, remote.url)).toEqual({ status: 200, ip: remote.hostIp });
    expect(await tunnel(one.port, remote.url)).toMatchObject({ ok: true, egressIp: remote.hostIp });
  });

  it('is stopped with its proxies by stopAllInstances', async () => {
    const pid = await forwarderPid();
    const markers = forwarderMarkers('pf', await realpath(stateDir));
    expect(await isOurs(pid, markers)).toBe(true);
    // The forwarder, and two instances of a proxy and its TLS listener.
    expect(await stopAllInstances(stateDir)).toBe(5);
    expect(await isOurs(pid, markers)).toBe(false);
  });
});

describe('a forwarder that cannot start', { timeout: 30_000 }, () => {
  it('makes the health check fail naming its address, and creates fail retryably', async () => {
    const foreign = net.createServer();
    await new Promise<void>((resolve) => foreign.listen(23530, '127.6.0.0', resolve));
    try {
      const backend = newBackend('pg', '127.6.0.0/24', [23530, 23539]);
      const health = await backend.check();
      expect(health).toMatchObject({ ok: false });
      expect(health.message).toContain('forwarder cannot listen on 127.6.0.0:23530');
      await expect(backend.create(spec('fw-blocked'))).rejects.toBeInstanceOf(RetryableError);
      await expect(backend.get('fw-blocked')).rejects.toThrow('not found');
    } finally {
      await new Promise((resolve) => foreign.close(resolve));
    }
  });
});
