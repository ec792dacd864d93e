/**
 * A counting forwarder in front of a function: the Pub/Sub emulator pushes to it, it forwards each
 * push unchanged and tallies the HTTP status the function answered — what Pub/Sub sees, and what
 * a production error dashboard would count.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface StatusTally {
  /** Where to push instead of the function. */
  url: string;
  /** Status code → responses. */
  counts(): Record<string, number>;
  close(): Promise<void>;
}

/** Starts a forwarder to `target` (`http://127.0.0.1:PORT`) on a free loopback port. */
export async function startStatusTally(target: string): Promise<StatusTally> {
  const counts: Record<string, number> = {};
  const to = new URL(target);
  const server = http.createServer((req, res) => {
    const upstream = http.request(
      { host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers },
      (answer) => {
        const status = String(answer.statusCode ?? 0);
        counts[status] = (counts[status] ?? 0) + 1;
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', (err) => {
      counts['unreachable'] = (counts['unreachable'] ?? 0) + 1;
      res.writeHead(502).end(err.message);
    });
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    counts: () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** The responses of 500 and above (and forwards that found no function) in a tally. */
export function errorResponses(counts: Record<string, number>): number {
  return Object.entries(counts).reduce(
    (n, [status, c]) => (status === 'unreachable' || Number(status) >= 500 ? n + c : n),
    0,
  );
}
