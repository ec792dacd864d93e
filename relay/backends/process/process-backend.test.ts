/** The process backend end to end: real tinyproxy processes in a temporary state directory. */
import { localEgressPolicy } from '../../../shared/config/egress-policy.js';
import { mkdtemp, readdir, readFile, realpath, rename, rm, stat, writeFile } from 'node:fs/promises';
import { X509Certificate } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EgressError,
  NotFoundError,
  PermanentError,
  QuotaExceededError,
  RetryableError,
  ValidationError,
} from '../../../shared/errors.js';
import { createLogger } from '../../../shared/logger.js';
import { startEchoServer, type EchoServer } from '../../../shared/probe/echo-server.js';
import { probeThroughProxy } from '../../../shared/probe/probe.js';
import { fingerprintOf } from '../../../shared/tls/pinned.js';
import type { InstanceSpec } from '../../../shared/providers/contract.js';
import type { RelayBackend } from '../backend.js';
import { createProcessBackend, stopAllInstances, type ProcessBackendOptions } from './index.js';
import { isOurs } from './processes.js';
import { markerArgs } from './proxy-config.js';
import { StateStore } from './state.js';
import { eventually } from '../../../test/support/eventually.js';

const PASSWORD = 's3cret-pw-do-not-log';
const logLines: string[] = [];
const logger = createLogger({ write: (line) => logLines.push(line), level: 'DEBUG' });
const stateDirs: string[] = [];
let echo: EchoServer;

async function newStateDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'egress-process-backend-'));
  stateDirs.push(dir);
  return dir;
}

function backendFor(stateDir: string, overrides: Partial<ProcessBackendOptions> = {}): RelayBackend {
  return createProcessBackend({
    provider: 'local',
    installationId: 'test',
    stateDir,
    bindAddresses: ['127.0.0.1'],
    portRange: [21000, 21049],
    // Loopback stands in for the Internet here: every loopback port is allowed.
    egress: localEgressPolicy([]),
    logger,
    ...overrides,
  });
}

function spec(name: string, overrides: Partial<InstanceSpec> = {}): InstanceSpec {
  return {
    name,
    proxy: name,
    installationId: 'test',
    specHash: 'abc123',
    port: 0,
    placement: {},
    credentials: { username: 'user', password: PASSWORD },
    ...overrides,
  };
}

/** A plain HTTP request through the proxy with an absolute URI (what `curl -x` does). */
function forward(port: number, url: string, auth?: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { host: new URL(url).host };
    if (auth) headers['proxy-authorization'] = `Basic ${Buffer.from(auth).toString('base64')}`;
    const req = http.request({ host: '127.0.0.1', port, path: url, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function recordOf(stateDir: string, name: string) {
  const result = await new StateStore(await realpath(stateDir)).read(name);
  if (result.kind !== 'ok') throw new Error(`no state for ${name}: ${result.kind}`);
  return result.record;
}

async function errorOf(promise: Promise<unknown>): Promise<EgressError> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof EgressError) return err;
    throw err;
  }
  throw new Error('expected a rejection');
}

beforeAll(async () => {
  echo = await startEchoServer();
}, 30_000);

afterAll(async () => {
  for (const dir of stateDirs) {
    await stopAllInstances(dir);
    await rm(dir, { recursive: true, force: true });
  }
  await echo.close();
  expect(logLines.join('\n')).not.toContain(PASSWORD);
}, 30_000);

describe('process backend', { timeout: 30_000 }, () => {
  let stateDir: string;
  let backend: RelayBackend;
  beforeAll(async () => {
    stateDir = await newStateDir();
    backend = backendFor(stateDir);
  });

  it('checks its state directory, range and tinyproxy', async () => {
    expect(await backend.check()).toMatchObject({ ok: true });
    const broken = backendFor(stateDir, { tinyproxyPath: '/nonexistent/tinyproxy' });
    const health = await broken.check();
    expect(health.ok).toBe(false);
    expect(health.message).toContain('tinyproxy-bin');
  });

  it('fails its check while its state directory is replaced by a file, and passes once it is back', async () => {
    const [own, other] = [await newStateDir(), await newStateDir()];
    const [b, neighbour] = [backendFor(own), backendFor(other, { provider: 'local-b' })];
    expect(await b.check()).toMatchObject({ ok: true });
    await rename(own, `${own}.away`);
    await writeFile(own, 'not a directory');
    const broken = await b.check();
    expect(broken.ok).toBe(false);
    expect(broken.message).toContain('ENOTDIR');
    expect(await neighbour.check()).toMatchObject({ ok: true });
    await rm(own);
    await rename(`${own}.away`, own);
    expect(await b.check()).toMatchObject({ ok: true });
  });

  it('creates a running proxy that requires its credentials (forwarding and CONNECT)', async () => {
    const instance = await backend.create(spec('ep-alpha'));
    expect(instance).toMatchObject({ name: 'ep-alpha', state: 'Running', ip: '127.0.0.1', installationId: 'test' });
    expect(instance.port).toBeGreaterThanOrEqual(21000);
    expect(instance.port).toBeLessThanOrEqual(21049);
    expect(instance.createdAt).toBeGreaterThan(0);
    const file = path.join(await realpath(stateDir), 'instances', 'ep-alpha.json');
    expect((await stat(file)).mode & 0o777).toBe(0o600);

    const ok = await forward(instance.port, echo.url, `user:${PASSWORD}`);
    expect(ok.status).toBe(200);
    expect(JSON.parse(ok.body)).toEqual({ ip: '127.0.0.1' });
    expect((await forward(instance.port, echo.url)).status).toBe(407);
    // tinyproxy, like on the guests, answers wrong credentials with 401 (the contract accepts both).
    expect([401, 407]).toContain((await forward(instance.port, echo.url, 'user:wrong')).status);

    const base = { host: instance.ip, port: instance.port, echoUrl: echo.url, timeoutMs: 3000 };
    const tunnel = await probeThroughProxy({ ...base, username: 'user', password: PASSWORD });
    expect(tunnel).toMatchObject({ ok: true, egressIp: '127.0.0.1' });
    const denied = await probeThroughProxy({ ...base, username: 'user', password: 'nope' });
    expect(denied).toMatchObject({ ok: false, status: 401, error: 'proxy answered 401 to CONNECT' });
    expect(await backend.credentials('ep-alpha')).toEqual({ username: 'user', password: PASSWORD });
  });

  it('serves the proxy through a TLS listener of its own, whose key stays on the host and whose certificate is pinned', async () => {
    const instance = await backend.create(spec('ep-tls'));
    expect(instance.tlsPort).toBeGreaterThanOrEqual(21000);
    expect(instance.tlsPort).not.toBe(instance.port);
    const files = new StateStore(await realpath(stateDir)).tlsPaths('ep-tls');
    expect((await stat(files.key)).mode & 0o777).toBe(0o600);
    const fingerprint = fingerprintOf(new X509Certificate(await readFile(files.cert)).raw);

    const base = { host: instance.ip, port: instance.port, echoUrl: echo.url, timeoutMs: 3000, username: 'user' };
    const tls = { port: instance.tlsPort ?? 0 };
    // First use learns the certificate; the pinned one is accepted; another is refused.
    const learnt = await probeThroughProxy({ ...base, password: PASSWORD, tls });
    expect(learnt).toMatchObject({ ok: true, egressIp: '127.0.0.1', tlsFingerprint: fingerprint });
    expect(await probeThroughProxy({ ...base, password: PASSWORD, tls: { ...tls, fingerprint } })).toMatchObject({
      ok: true,
    });
    const other = 'ab'.repeat(32);
    const refused = await probeThroughProxy({ ...base, password: PASSWORD, tls: { ...tls, fingerprint: other } });
    expect(refused).toMatchObject({ ok: false, tlsFingerprint: fingerprint });
    expect(refused.error).toContain(`pinned sha256 ${other}, presented ${fingerprint}`);
    // tinyproxy behind the listener still wants the credentials.
    expect(await probeThroughProxy({ ...base, password: 'nope', tls })).toMatchObject({ ok: false, status: 401 });

    // A listener that died takes its instance with it; the restart keeps the certificate clients pinned.
    const record = await recordOf(stateDir, 'ep-tls');
    process.kill(record.tlsPid ?? 0, 'SIGKILL');
    await eventually(async () => expect((await backend.get('ep-tls')).state).toBe('Terminated'), 5000, 50);
    const restarted = await backend.create(spec('ep-tls'));
    expect(restarted).toMatchObject({ state: 'Running', tlsPort: instance.tlsPort });
    expect(
      await probeThroughProxy({ ...base, port: restarted.port, password: PASSWORD, tls: { ...tls, fingerprint } }),
    ).toMatchObject({ ok: true });
    // Gone with the instance: the next one of the name makes its own.
    await backend.delete('ep-tls');
    await expect(stat(files.key)).rejects.toThrow();
  });

  it('adopts on a duplicate create, also from a fresh backend over the same state (relay restart)', async () => {
    const before = await recordOf(stateDir, 'ep-alpha');
    const again = await backend.create(spec('ep-alpha'));
    expect(again.port).toBe(before.port);
    expect((await recordOf(stateDir, 'ep-alpha')).pid).toBe(before.pid);

    const restarted = backendFor(stateDir);
    expect(await restarted.get('ep-alpha')).toMatchObject({
      state: 'Running',
      port: before.port,
      createdAt: before.createdAt,
    });
    await restarted.create(spec('ep-alpha'));
    expect((await recordOf(stateDir, 'ep-alpha')).pid).toBe(before.pid);
    await restarted.close();
  });

  it('reports Terminated after kill -9, and a create restarts it on the same port', async () => {
    const before = await recordOf(stateDir, 'ep-alpha');
    process.kill(before.pid, 'SIGKILL');
    await eventually(
      async () => expect((await backend.get('ep-alpha')).state, 'ep-alpha after kill -9').toBe('Terminated'),
      5000,
      50,
    );
    const listed = await backend.list();
    expect(listed.find((i) => i.name === 'ep-alpha')).toMatchObject({
      state: 'Terminated',
      createdAt: before.createdAt,
    });

    const restarted = await backend.create(spec('ep-alpha'));
    expect(restarted).toMatchObject({ state: 'Running', port: before.port });
    expect((await recordOf(stateDir, 'ep-alpha')).pid).not.toBe(before.pid);
  });

  it('deletes idempotently and stops the process', async () => {
    const { pid } = await recordOf(stateDir, 'ep-alpha');
    const markers = markerArgs('ep-alpha', await realpath(stateDir));
    expect(await isOurs(pid, markers)).toBe(true);
    await backend.delete('ep-alpha');
    expect(await isOurs(pid, markers)).toBe(false);
    expect(await errorOf(backend.get('ep-alpha'))).toBeInstanceOf(NotFoundError);
    await backend.delete('ep-alpha');
    await backend.delete('ep-never-existed');
  });

  it('gives concurrent creates of distinct names distinct ports', async () => {
    const names = ['ep-c1', 'ep-c2', 'ep-c3', 'ep-c4', 'ep-c5'];
    const created = await Promise.all(names.map((n) => backend.create(spec(n))));
    expect(new Set(created.map((i) => i.port)).size).toBe(names.length);
    expect(created.every((i) => i.state === 'Running')).toBe(true);
    const again = await Promise.all(names.map((n) => backend.create(spec(n))));
    expect(again.map((i) => i.port)).toEqual(created.map((i) => i.port));
  });

  it('honours a fixed port and names spec.port when it cannot', async () => {
    const fixed = await backend.create(spec('ep-fixed', { port: 21040 }));
    expect(fixed.port).toBe(21040);
    const clash = await errorOf(backend.create(spec('ep-clash', { port: 21040 })));
    expect(clash).toBeInstanceOf(PermanentError);
    expect(clash.toInfo().field).toBe('spec.port');
    const outside = await errorOf(backend.create(spec('ep-outside', { port: 30000 })));
    expect(outside).toBeInstanceOf(PermanentError);
    expect(outside.toInfo().field).toBe('spec.port');
  });

  it('validates placement and names the field', async () => {
    expect(backend.resolvePlacement({})).toEqual({ bindAddress: '127.0.0.1' });
    expect(() => backend.resolvePlacement({ bindAddress: '10.9.9.9' })).toThrow(ValidationError);
    const bad = await errorOf(backend.create(spec('ep-bad', { placement: { bindAddress: '10.9.9.9' } })));
    expect(bad).toBeInstanceOf(PermanentError);
    expect(bad.toInfo().field).toBe('spec.placement.bindAddress');
    const unknown = await errorOf(backend.create(spec('ep-bad', { placement: { zone: 'x' } })));
    expect(unknown.toInfo().field).toBe('spec.placement.zone');
    expect(await errorOf(backend.get('ep-bad'))).toBeInstanceOf(NotFoundError);
  });

  it('lists only this installation and skips corrupt state files', async () => {
    await backend.create(spec('ep-foreign', { installationId: 'other' }));
    await writeFile(path.join(await realpath(stateDir), 'instances', 'ep-corrupt.json'), '{"name": 1');
    const names = (await backend.list()).map((i) => i.name).sort();
    expect(names).toEqual(['ep-c1', 'ep-c2', 'ep-c3', 'ep-c4', 'ep-c5', 'ep-fixed']);
    expect(logLines.some((l) => l.includes('skipping unreadable instance state'))).toBe(true);
    expect(await errorOf(backend.get('ep-corrupt'))).toBeInstanceOf(PermanentError);
    await backend.delete('ep-corrupt');
    expect(await errorOf(backend.get('ep-corrupt'))).toBeInstanceOf(NotFoundError);
  });

  it('stops every recorded process with stopAllInstances', async () => {
    const pids = await Promise.all(
      ['ep-c1', 'ep-fixed', 'ep-foreign'].map(async (n) => (await recordOf(stateDir, n)).pid),
    );
    // Seven instances: a proxy and its TLS listener each.
    expect(await stopAllInstances(stateDir)).toBe(14);
    expect(await readdir(path.join(stateDir, 'instances'))).toEqual([]);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
  });
});

describe('process backend limits', { timeout: 30_000 }, () => {
  it('reports QuotaExceeded when no port in the range is free (a foreign listener counts)', async () => {
    const foreign = net.createServer();
    await new Promise<void>((resolve) => foreign.listen(21052, '127.0.0.1', resolve));
    try {
      // An instance takes two ports: its proxy's and its TLS listener's.
      const backend = backendFor(await newStateDir(), { portRange: [21050, 21052] });
      expect(await backend.create(spec('ep-q1'))).toMatchObject({ port: 21050, tlsPort: 21051 });
      expect(await errorOf(backend.create(spec('ep-q2')))).toBeInstanceOf(QuotaExceededError);
      expect(await errorOf(backend.get('ep-q2'))).toBeInstanceOf(NotFoundError);
    } finally {
      await new Promise((resolve) => foreign.close(resolve));
    }
  });

  it('fails a create retryably when the proxy server cannot start, leaving no state', async () => {
    const dir = await newStateDir();
    const missing = path.join(dir, 'missing-tinyproxy');
    const backend = backendFor(dir, { tinyproxyPath: missing, portRange: [21052, 21053] });
    expect(await errorOf(backend.create(spec('ep-broken')))).toBeInstanceOf(RetryableError);
    expect(await errorOf(backend.get('ep-broken'))).toBeInstanceOf(NotFoundError);
    expect(await readFile(path.join(await realpath(dir), 'logs', 'ep-broken.log'), 'utf8')).toContain(
      'missing-tinyproxy',
    );
  });
});
