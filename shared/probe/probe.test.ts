/** probeThroughProxy against real local servers, and the nextHealth bookkeeping. */
import http from 'node:http';
import net from 'node:net';
import { createProxy } from 'proxy';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Health } from '../domain/status.js';
import { startEchoServer, type EchoServer } from './echo-server.js';
import { nextHealth, probeThroughProxy, proxyNotReached, type ProbeResult } from './probe.js';

const USER = 'prober';
const PASSWORD = 'pa55-word';

function listen(server: net.Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
}

function close(server: net.Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

describe('probeThroughProxy', () => {
  let echo: EchoServer;
  let proxy: http.Server;
  let proxyPort: number;
  const sockets = new Set<net.Socket>();

  beforeAll(async () => {
    echo = await startEchoServer();
    const server = createProxy(http.createServer());
    const expected = `Basic ${Buffer.from(`${USER}:${PASSWORD}`).toString('base64')}`;
    server.authenticate = (req) => req.headers['proxy-authorization'] === expected;
    server.on('connection', (s: net.Socket) => sockets.add(s));
    proxy = server;
    proxyPort = await listen(server);
  });

  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await close(proxy);
    await echo.close();
  });

  const base = () => ({
    host: '127.0.0.1',
    port: proxyPort,
    username: USER,
    password: PASSWORD,
    echoUrl: echo.url,
    timeoutMs: 2000,
  });

  it('reaches the echo endpoint through a CONNECT tunnel and reports the egress IP', async () => {
    const result = await probeThroughProxy(base());
    expect(result).toMatchObject({ ok: true, egressIp: '127.0.0.1', status: 200 });
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    expect(result.error).toBeUndefined();
  });

  it('keeps the echo path and query', async () => {
    const result = await probeThroughProxy({ ...base(), echoUrl: `${echo.url}some/path?x=1` });
    expect(result.ok).toBe(true);
  });

  it('is not ok when the proxy answers 407 to wrong credentials, and never echoes them', async () => {
    const result = await probeThroughProxy({ ...base(), password: 'wrong-secret' });
    expect(result).toMatchObject({ ok: false, status: 407, error: 'proxy answered 407 to CONNECT' });
    expect(JSON.stringify(result)).not.toContain('wrong-secret');
  });

  it('is not ok when the proxy is down', async () => {
    const gone = net.createServer();
    const port = await listen(gone);
    await close(gone);
    const result = await probeThroughProxy({ ...base(), port });
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/cannot reach proxy 127\.0\.0\.1:\d+: .*ECONNREFUSED/);
    expect(proxyNotReached(result.error)).toBe(true);
  });

  it('names a timeout before any connection as the proxy not reached (a firewall dropping the SYN)', async () => {
    // 192.0.2.1 (TEST-NET-1, RFC 5737) is never routed: the connection attempt hangs or fails.
    const result = await probeThroughProxy({ ...base(), host: '192.0.2.1', port: 3128, timeoutMs: 300 });
    expect(result.ok).toBe(false);
    expect(result.error).toMatch(/^cannot reach proxy 192\.0\.2\.1:3128: /);
    expect(proxyNotReached(result.error)).toBe(true);
  });

  it('times out when the proxy accepts the connection but never answers: the proxy was reached', async () => {
    const silent = net.createServer((socket) => sockets.add(socket));
    const port = await listen(silent);
    try {
      const result = await probeThroughProxy({ ...base(), port, timeoutMs: 300 });
      expect(result).toMatchObject({ ok: false, error: 'timed out after 300 ms' });
      expect(proxyNotReached(result.error)).toBe(false);
      expect(result.latencyMs).toBeGreaterThanOrEqual(250);
      expect(result.latencyMs).toBeLessThan(2000);
    } finally {
      for (const s of sockets) s.destroy();
      await close(silent);
    }
  });

  it('is not ok when the echo endpoint does not answer JSON with an ip', async () => {
    const other = http.createServer((_req, res) => res.writeHead(200).end('hello'));
    const port = await listen(other);
    try {
      const result = await probeThroughProxy({ ...base(), echoUrl: `http://127.0.0.1:${port}/` });
      expect(result).toMatchObject({ ok: false, error: 'echo response is not JSON' });
    } finally {
      await close(other);
    }
  });

  it('reports a bad echo URL without throwing', async () => {
    expect(await probeThroughProxy({ ...base(), echoUrl: 'not a url' })).toMatchObject({ ok: false });
  });
});

describe('echo server', () => {
  it('answers /healthz and the caller IP', async () => {
    const echo = await startEchoServer();
    try {
      expect(await (await fetch(`${echo.url}healthz`)).text()).toBe('ok\n');
      expect(await (await fetch(`${echo.url}anything`)).json()).toEqual({ ip: '127.0.0.1' });
      expect((await fetch(echo.url, { method: 'POST' })).status).toBe(405);
    } finally {
      await echo.close();
    }
  });
});

describe('nextHealth', () => {
  const now = new Date('2025-01-02T03:04:05.000Z');
  const ok: ProbeResult = { ok: true, latencyMs: 12, egressIp: '1.2.3.4', status: 200 };
  const failed: ProbeResult = { ok: false, latencyMs: 3000, error: 'timed out after 3000 ms' };

  it.each<[string, Health | undefined, ProbeResult, Partial<Health>]>([
    ['first success', undefined, ok, { ok: true, consecutiveFailures: 0, egressIp: '1.2.3.4', latencyMs: 12 }],
    ['first failure', undefined, failed, { ok: false, consecutiveFailures: 1, error: 'timed out after 3000 ms' }],
    [
      'failure after failures',
      { lastProbeAt: 'x', ok: false, consecutiveFailures: 2 },
      failed,
      { ok: false, consecutiveFailures: 3 },
    ],
    [
      'success resets',
      { lastProbeAt: 'x', ok: false, consecutiveFailures: 5 },
      ok,
      { ok: true, consecutiveFailures: 0 },
    ],
    [
      'failure after success',
      { lastProbeAt: 'x', ok: true, consecutiveFailures: 0, egressIp: '1.2.3.4' },
      failed,
      { ok: false, consecutiveFailures: 1 },
    ],
  ])('%s', (_name, previous, result, expected) => {
    const health = nextHealth(previous, result, now);
    expect(health).toMatchObject({ ...expected, lastProbeAt: '2025-01-02T03:04:05.000Z' });
    if (result.ok) expect(health).not.toHaveProperty('error');
    else expect(health).not.toHaveProperty('egressIp');
    expect(Object.values(health)).not.toContain(undefined);
  });
});
