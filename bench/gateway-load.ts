/** Load generators for the gateway bench: keep-alive GETs through a proxy, and CONNECT tunnels held open. */
import http from 'node:http';
import net from 'node:net';
import { performance } from 'node:perf_hooks';

/** An HTTP proxy to send absolute-URI requests to, with its `Proxy-Authorization`. */
export interface ProxyHop {
  port: number;
  authorization: string;
}

/** One GET of `target` through `hop` on `agent`; resolves with its latency in ms. */
export function getThrough(hop: ProxyHop, target: string, agent: http.Agent): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: hop.port, path: target, agent, headers: { 'proxy-authorization': hop.authorization } },
      (res) => {
        if (res.statusCode !== 200) reject(new Error(`HTTP ${res.statusCode ?? 0} through port ${hop.port}`));
        res.resume().once('end', () => resolve(performance.now() - started));
      },
    );
    req.once('error', reject).end();
  });
}

/**
 * Requests per second with `concurrency` clients for `ms`, keep-alive unless `keepAlive` is false
 * (for a proxy that closes every connection after its answer without saying so, as tinyproxy does:
 * a client reusing the socket would race the close).
 */
export async function throughput(
  hop: ProxyHop,
  target: string,
  concurrency: number,
  ms: number,
  keepAlive = true,
): Promise<number> {
  // Without keep-alive no socket cap: a capped agent hands a freed socket to a queued request
  // even then, and that socket is one the proxy is closing ("socket hang up").
  const agent = new http.Agent(keepAlive ? { keepAlive, maxSockets: concurrency } : { keepAlive });
  const end = performance.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await getThrough(hop, target, agent);
        done++;
      }
    }),
  );
  agent.destroy();
  return done / (ms / 1000);
}

/** How long one tunnel of `holdTunnels` may take to be set up and answer its first request. */
const TUNNEL_TIMEOUT_MS = 30_000;

/**
 * Opens `count` CONNECT tunnels to `authority` through `hop`, each used for one request to prove it
 * is established, and keeps them open.
 *
 * @returns the open sockets (the caller destroys them) and how many failed
 */
export async function holdTunnels(
  hop: ProxyHop,
  authority: string,
  count: number,
): Promise<{ sockets: net.Socket[]; failed: number }> {
  const sockets: net.Socket[] = [];
  let failed = 0;
  const one = () =>
    new Promise<void>((resolve) => {
      const s = net.connect(hop.port, '127.0.0.1');
      let buffered = '';
      let established = false;
      let settled = false;
      const fail = () => {
        if (settled) return;
        settled = true;
        failed++;
        s.destroy();
        resolve();
      };
      s.once('error', fail);
      s.once('close', fail);
      // A tunnel not through in this long counts as failed (a proxy at its MaxClients accepts
      // the connection and never answers it), so the bench goes on instead of waiting forever.
      s.setTimeout(TUNNEL_TIMEOUT_MS, () => {
        if (!settled) fail();
      });
      s.once('connect', () =>
        s.write(
          `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${hop.authorization}\r\n\r\n`,
        ),
      );
      s.on('data', (c: Buffer) => {
        buffered += c.toString('latin1');
        if (!established && buffered.includes('\r\n\r\n')) {
          if (!buffered.startsWith('HTTP/1.1 200')) return fail();
          established = true;
          buffered = '';
          s.write(`GET / HTTP/1.1\r\nHost: ${authority}\r\n\r\n`);
        } else if (established && buffered.includes('\r\n\r\n')) {
          settled = true;
          s.setTimeout(0);
          s.removeAllListeners('data');
          s.removeAllListeners('close');
          sockets.push(s);
          resolve();
        }
      });
    });
  // In batches, as a crawler ramps up, so the listen backlog is not the thing measured.
  for (let i = 0; i < count; i += 100) await Promise.all(Array.from({ length: Math.min(100, count - i) }, one));
  return { sockets, failed };
}
