/** A tiny echo endpoint for probes: answers every GET with the caller's IP as JSON. */
import http from 'node:http';
import { mapSource, type EchoMapping } from './echo-map.js';

/** A running echo server. */
export interface EchoServer {
  /** Base URL, e.g. `http://127.0.0.1:8088/`. */
  url: string;
  port: number;
  close(): Promise<void>;
}

/** The caller's address as people write it: IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes `1.2.3.4`. */
export function callerIp(remoteAddress: string | undefined): string {
  return (remoteAddress ?? '').replace(/^::ffff:/, '');
}

/**
 * Starts the echo server. `GET /healthz` answers `ok`; any other GET answers
 * `{"ip": "<caller address>"}`; other methods get 405.
 *
 * @param options.host - listen address (default `127.0.0.1`)
 * @param options.port - listen port (default `0`: any free port)
 * @param options.sourceMap - loopback sources answered as public-looking addresses (a local stack only: echo-map.ts)
 */
export function startEchoServer(
  options: { host?: string; port?: number; sourceMap?: readonly EchoMapping[] } = {},
): Promise<EchoServer> {
  const { host = '127.0.0.1', port = 0, sourceMap = [] } = options;
  const server = http.createServer((req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (new URL(req.url ?? '/', 'http://echo').pathname === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n');
      return;
    }
    const body = JSON.stringify({ ip: mapSource(sourceMap, callerIp(req.socket.remoteAddress)) });
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(body);
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const address = server.address();
      const bound = typeof address === 'object' && address !== null ? address.port : port;
      const urlHost = host.includes(':') ? `[${host}]` : host;
      resolve({
        url: `http://${urlHost}:${bound}/`,
        port: bound,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done());
            server.closeAllConnections();
          }),
      });
    });
  });
}
