/**
 * The real API handler (shared/api/handler.ts) on a real HTTP server at 127.0.0.1 (a free port),
 * over a MemoryFleet's repositories and bus: what functions/api/index.ts does, without the
 * Firestore runtime. Clients such as the CLI are tested against it.
 */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { handleApi } from '../../shared/api/handler.js';
import type { MemoryFleet } from './memory-fleet.js';

/** One request the server received: method, path with query, and whether it carried a configured token. */
export interface Received {
  method: string;
  url: string;
  authorized: boolean;
}

export interface ApiServer {
  url: string;
  requests: Received[];
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString()));
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}

/** Starts the server; `close()` stops it (the fleet keeps its state). */
export async function startApiServer(fleet: MemoryFleet): Promise<ApiServer> {
  const requests: Received[] = [];
  const deps = { ...fleet, now: () => fleet.clock.now() };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://api.local');
    const header = req.headers.authorization;
    const authorized = fleet.config.apiTokens.some((t) => header === `Bearer ${t.token}`);
    requests.push({ method: req.method ?? '', url: `${url.pathname}${url.search}`, authorized });
    const answer = async () => {
      const text = await readBody(req);
      // The functions framework parses a JSON body; a body that is not JSON reaches the handler as text.
      let body: unknown = text === '' ? undefined : text;
      try {
        if (text !== '') body = JSON.parse(text);
      } catch {
        // left as text: the handler names `(body)`
      }
      const path = url.pathname.replace(/\/+$/, '') || '/';
      const response = await handleApi(deps, {
        method: req.method ?? 'GET',
        path,
        query: url.searchParams,
        headers: req.headers,
        body,
        bodyBytes: Buffer.byteLength(text),
      });
      const payload = typeof response.body === 'string' ? response.body : JSON.stringify(response.body);
      const type = typeof response.body === 'string' ? 'text/plain' : 'application/json';
      res.writeHead(response.status, { 'content-type': type, ...response.headers }).end(payload);
    };
    answer().catch((err: unknown) => res.writeHead(500).end(String(err)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
