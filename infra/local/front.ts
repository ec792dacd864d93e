/**
 * A function's address that outlives its instances, as a Cloud Run service URL does: the launcher
 * listens on the function's port and passes each request to the instance running now (a
 * functions-framework child listening on a port of its own). While no instance listens (killed,
 * being started again, restarted for a new config), a request waits for the next one instead of
 * being refused; after `waitMs` it gets 503. A request whose instance dies before answering gets
 * 503, as Cloud Run answers when an instance crashes; a push is then delivered again by Pub/Sub.
 *
 * Why: the Pub/Sub emulator counts each refused push as a delivery attempt and tries again about
 * every second, so a few seconds of restart dead-lettered requests after `maxDeliveryAttempts`
 * (500-proxy `npm run chaos`); real Pub/Sub never meets a refused connection at a Cloud Run URL.
 *
 * A request's time is bounded as Cloud Run bounds it: past the function's timeout the front answers
 * 504 and closes the connection to the instance ("If your service doesn't respond within this limit,
 * Cloud Run closes the network connection and returns an HTTP 504 error",
 * https://cloud.google.com/run/docs/configuring/request-timeout). A client that closes its request
 * closes the instance's too, so the function sees it abandoned (functions/api/index.ts stops its work).
 */
import {
  createServer,
  request,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';
import { waitForPort } from './children.js';

export interface Front {
  /** The port clients (and push subscriptions) use. */
  port: number;
  /** Requests waiting now for an instance to listen. */
  waiting(): number;
  close(): Promise<void>;
}

export interface FrontOptions {
  host: string;
  /** The port to listen on (0: any free one). */
  port: number;
  /** The port the current instance listens on. */
  instancePort: number;
  /** How long a request may wait for an instance to listen (default 60 s). */
  waitMs?: number;
  /** How long a request may take in all, waiting included, before it is answered 504 (the function's timeout; default 300 s). */
  timeoutMs?: number;
}

/** Codes that say nothing listens at the instance port (yet): wait for an instance, then send. */
const NOT_LISTENING = new Set(['ECONNREFUSED']);

/** Fields of one connection (RFC 9110 §7.6.1), not passed on: each side frames its own. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te']);

function endToEnd(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !HOP_BY_HOP.has(k)));
}

export async function startFront(opts: FrontOptions): Promise<Front> {
  const { host, instancePort } = opts;
  const waitMs = opts.waitMs ?? 60_000;
  const timeoutMs = opts.timeoutMs ?? 300_000;
  // One wait for an instance shared by every request that met none.
  let listening: Promise<void> | undefined;
  let waiting = 0;
  const instanceUp = () =>
    (listening ??= waitForPort(host, instancePort, waitMs).finally(() => (listening = undefined)));

  const send = (req: IncomingMessage, body: Buffer, res: ServerResponse, deadline: number): void => {
    // A connection per request: a kept-alive one could meet an instance closing it (a spurious 503).
    const framed = body.length > 0 || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'];
    const headers = { ...endToEnd(req.headers), ...(framed && { 'content-length': body.length }) };
    const upstream = request(
      { host, port: instancePort, method: req.method, path: req.url, headers, agent: false },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, endToEnd(answer.headers));
        answer.pipe(res);
        answer.once('aborted', () => res.destroy());
      },
    );
    // The client gone (or the bound reached): the instance's connection closes too.
    const abandon = () => upstream.destroy(new Error('abandoned'));
    res.once('close', abandon);
    upstream.once('close', () => res.off('close', abandon));
    upstream.once('error', (err: NodeJS.ErrnoException) => {
      if (res.writableEnded || res.destroyed) return;
      if (res.headersSent) return void res.destroy();
      if (NOT_LISTENING.has(err.code ?? '') && Date.now() < deadline) {
        waiting++;
        instanceUp()
          .finally(() => waiting--)
          .then(
            () => send(req, body, res, deadline),
            () => fail(res, 503, `no instance of this function listens after ${waitMs} ms`),
          );
        return;
      }
      fail(res, 503, `the instance stopped before answering (${err.code ?? err.message})`);
    });
    upstream.end(body);
  };

  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    const bound = setTimeout(() => {
      if (res.headersSent) return void res.destroy();
      fail(res, 504, `the function did not answer within its timeout of ${timeoutMs} ms`);
    }, timeoutMs);
    res.once('close', () => clearTimeout(bound));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.once('end', () => send(req, Buffer.concat(chunks), res, Date.now() + waitMs));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    waiting: () => waiting,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function fail(res: ServerResponse, status: number, message: string): void {
  if (res.headersSent || res.destroyed) return;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(`${message}\n`);
}
