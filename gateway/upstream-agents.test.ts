/** What the gateway learns about a fleet proxy's connections: kept alive until it is seen closing every one. */
import http from 'node:http';
import type net from 'node:net';
import { describe, expect, it } from 'vitest';
import { UpstreamAgents } from './upstream-agents.js';
import { startGateway } from './server.js';
import { createMemoryFleetApi } from './testing.js';
import type { Upstream } from './selection.js';

const upstream = (name: string): Upstream => ({
  name,
  provider: 'p',
  host: '127.0.0.1',
  port: 3128,
  authorization: 'Basic eDp5',
  egressIp: undefined,
});

describe('upstream agents', () => {
  it('stop keeping alive the connections of a proxy that closed three kept-alive sockets in a row', () => {
    const agents = new UpstreamAgents();
    const tiny = upstream('tiny');
    expect(agents.get(tiny)).toBeDefined();
    agents.stale(tiny);
    agents.stale(tiny);
    expect(agents.keepsAlive(tiny)).toBe(true);
    agents.stale(tiny);
    expect(agents.keepsAlive(tiny)).toBe(false);
    expect(agents.get(tiny)).toBeUndefined();
    agents.destroy();
  });

  it('keep alive a proxy whose closed sockets are rare (a reuse that worked resets the count)', () => {
    const agents = new UpstreamAgents();
    const node = upstream('node');
    for (let i = 0; i < 10; i++) {
      agents.stale(node);
      agents.stale(node);
      agents.reused(node);
    }
    expect(agents.keepsAlive(node)).toBe(true);
    expect(agents.get(node)).toBeDefined();
    agents.destroy();
  });

  it('forget what they learnt of a proxy that left the Ready list', () => {
    const agents = new UpstreamAgents();
    const tiny = upstream('tiny');
    for (let i = 0; i < 3; i++) agents.stale(tiny);
    agents.prune([upstream('other')]);
    expect(agents.keepsAlive(tiny)).toBe(true);
    agents.destroy();
  });
});

/**
 * A fleet proxy that answers HTTP/1.1 keep-alive but closes a connection as soon as a second
 * request arrives on it: every reuse meets a closed socket, every time (tinyproxy does the same,
 * but whether a reuse beats its FIN is a race).
 */
async function startClosingProxy(): Promise<{ upstream: Upstream; connections: number[]; close(): Promise<void> }> {
  const connections: number[] = [];
  const seen = new WeakMap<net.Socket, number>();
  const server = http.createServer((req, res) => {
    const socket = req.socket;
    if (!seen.has(socket)) seen.set(socket, connections.push(0) - 1);
    const index = seen.get(socket)!;
    connections[index]! += 1;
    if (connections[index]! > 1) return void socket.destroy();
    res.end('ok');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const { port } = server.address() as net.AddressInfo;
  return {
    upstream: { ...upstream('closing'), port },
    connections,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('upstream agents behind a gateway', () => {
  it('learn that a proxy closes every kept-alive socket, resend each such request, then connect anew', async () => {
    const proxy = await startClosingProxy();
    const fleet = createMemoryFleetApi([proxy.upstream]);
    const gw = await startGateway({ fleet: fleet.api, listen: { host: '127.0.0.1', port: 0 }, refreshMs: 60_000 });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const auth = `Basic ${Buffer.from(`${gw.credentials.username}:${gw.credentials.password}`).toString('base64')}`;
    const one = () =>
      new Promise<number>((resolve, reject) => {
        const options = { host: '127.0.0.1', port: gw.address.port, path: 'http://example.test/', agent };
        http
          .get({ ...options, headers: { 'proxy-authorization': auth } }, (res) =>
            res.resume().once('end', () => resolve(res.statusCode ?? 0)),
          )
          .once('error', reject);
      });
    try {
      const statuses: number[] = [];
      // One at a time: each request after a fresh connection's first reuses it and meets it closed.
      for (let i = 0; i < 6; i++) {
        statuses.push(await one());
        if (i < 5) expect(gw.upstreams.keepsAlive(proxy.upstream)).toBe(true);
      }
      expect(gw.upstreams.keepsAlive(proxy.upstream)).toBe(false);
      const before = proxy.connections.length;
      for (let i = 0; i < 4; i++) statuses.push(await one());
      expect(statuses).toEqual(new Array(10).fill(200));
      expect((await gw.metrics.totals()).get('closing')).toMatchObject({ ok: 10, failed: 0 });
      // Three resends on a closed socket, then four requests on four connections of their own.
      expect(proxy.connections.slice(before)).toEqual([1, 1, 1, 1]);
      expect(proxy.connections.filter((n) => n === 2)).toHaveLength(3);
    } finally {
      agent.destroy();
      await gw.close();
      await proxy.close();
    }
  });
});
