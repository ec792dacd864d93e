/** Plain HTTP through the fleet: an absolute-URI request forwarded via a chosen proxy, retried elsewhere when that proxy fails. */
import http from 'node:http';
import type { Attempt, FleetRouter } from './router.js';
import type { Steering } from './grammar.js';
import { endToEndHeaders, hasBody } from './headers.js';
import type { Upstream } from './selection.js';
import { HOP_FAILURES } from './tunnel.js';
import { connectAnew, type UpstreamAgents } from './upstream-agents.js';

/** Request bodies up to this size are buffered so that a failed attempt can be sent again. */
export const MAX_BODY_BYTES = 16 * 1024 * 1024;
/** Methods that may be sent again after the request went out (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE']);
/**
 * True when the fleet proxy itself refused the credentials it was sent: a 407, or tinyproxy's own
 * 401 (every backend runs tinyproxy, which answers wrong credentials with 401 where RFC 9110 wants
 * 407), told from a target's 401 by tinyproxy's realm and Server field. It happens when the list
 * is stale and another proxy of the fleet now listens at an old address.
 */
function refusesCredentials(response: http.IncomingMessage): boolean {
  if (response.statusCode === 407) return true;
  return (
    response.statusCode === 401 &&
    response.headers['www-authenticate'] === 'Basic realm="Tinyproxy"' &&
    String(response.headers['server'] ?? '').startsWith('tinyproxy/')
  );
}
/** Re-framed by the gateway from the buffered body, never copied from the client. */
const REFRAMED: ReadonlySet<string> = new Set(['content-length']);
/**
 * Methods Node sends without framing when there is no body. With array headers, written when the
 * request is made, any other method without `Content-Length` would go out chunked; it gets
 * `Content-Length: 0`, as Node gives it with object headers.
 */
const UNFRAMED_WITHOUT_BODY = new Set(['GET', 'HEAD', 'DELETE', 'OPTIONS', 'TRACE', 'CONNECT']);
/** Errors that mean the proxy was never reached: the request did not go out. */
const NOT_SENT = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ENOTFOUND']);

export interface ForwardOptions {
  banOn: ReadonlySet<number>;
  connectTimeoutMs: number;
  responseTimeoutMs: number;
}

/**
 * @returns the body; undefined when it is too large to buffer; null when it never completed (the
 *   client went away, or its framing was broken: the server's parse-error answer has been sent)
 */
function readBody(req: http.IncomingMessage): Promise<Buffer | undefined | null> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        resolve(undefined);
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks)));
    req.on('error', () => resolve(null));
    req.on('close', () => resolve(req.complete ? Buffer.concat(chunks) : null));
  });
}

/** Answers the client with an error of the gateway's own (never a proxy's or the target's). */
export function gatewayError(res: http.ServerResponse, status: number, message: string): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const body = `egress gateway: ${message}\n`;
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

/**
 * What a response head says about the attempt: a refusal of the proxy's credentials or a hop
 * failure (407/502/503/504 from the proxy) is the proxy's fault; a `--ban-on` status is the
 * target's verdict on this egress. Either is retried elsewhere, keeping the response as the
 * fallback answer (not for a refusal, which says nothing to the client).
 */
function judgeResponse(
  response: http.IncomingMessage,
  startedAt: number,
  banOn: ReadonlySet<number>,
): Attempt<{ response: http.IncomingMessage; startedAt: number }> {
  const status = response.statusCode ?? 0;
  const keep = { value: { response, startedAt }, discard: () => response.destroy() };
  const refused = refusesCredentials(response);
  if (refused || HOP_FAILURES.has(status)) {
    if (refused) response.resume();
    return {
      ok: false,
      reason: refused ? `the proxy refused its credentials (${status})` : `${status} at the proxy hop`,
      penalize: true,
      retry: true,
      refused,
      ...(!refused && { fallback: keep }),
    };
  }
  if (banOn.has(status))
    return {
      ok: false,
      reason: `${status} from the target (--ban-on)`,
      penalize: false,
      retry: true,
      banned: { status },
      fallback: keep,
    };
  return { ok: true, value: { response, startedAt } };
}

function attemptOnce(
  upstream: Upstream,
  req: http.IncomingMessage,
  headers: readonly string[],
  body: Buffer | undefined,
  agents: UpstreamAgents | undefined,
  options: ForwardOptions,
): Promise<Attempt<{ response: http.IncomingMessage; startedAt: number }>> {
  const startedAt = performance.now();
  const agent = agents?.get(upstream);
  return new Promise((resolve) => {
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const done = (a: Attempt<{ response: http.IncomingMessage; startedAt: number }>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      resolve(a);
    };
    const upstreamReq = http.request({
      host: upstream.host,
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: [...headers, 'Proxy-Authorization', upstream.authorization],
      ...(agent ? { agent } : { createConnection: connectAnew(upstream, options.connectTimeoutMs) }),
    });
    let connected = false;
    const onConnected = () => {
      connected = true;
      clearTimeout(timer);
      const ms = options.responseTimeoutMs;
      timer = setTimeout(() => upstreamReq.destroy(new Error(`no response within ${ms} ms`)), ms);
    };
    // One timer at a time: the connect timeout from the start (a TLS listener's socket is handed
    // over only after its handshake, so waiting for it counts too), then the response timeout once
    // the socket is connected (a kept-alive one is at once).
    const connectMs = options.connectTimeoutMs;
    timer = setTimeout(() => upstreamReq.destroy(new Error(`no connection within ${connectMs} ms`)), connectMs);
    upstreamReq.once('socket', (socket) => {
      if (settled) return;
      if (!socket.connecting) return onConnected();
      socket.once('connect', onConnected);
    });
    upstreamReq.on('response', (response) => {
      if (upstreamReq.reusedSocket) agents?.reused(upstream);
      done(judgeResponse(response, startedAt, options.banOn));
    });
    upstreamReq.on('error', (err: NodeJS.ErrnoException) => {
      const stale = upstreamReq.reusedSocket && err.code === 'ECONNRESET';
      if (stale && agent !== undefined && !settled) {
        // A kept-alive socket the proxy had closed (tinyproxy answers HTTP/1.1 without
        // `Connection: close`, then closes): nothing was answered, so send it again on a fresh
        // connection to the same proxy rather than counting it against the proxy.
        settled = true;
        clearTimeout(timer);
        agents?.stale(upstream);
        resolve(attemptOnce(upstream, req, headers, body, undefined, options));
        return;
      }
      const resend = stale || NOT_SENT.has(err.code ?? '') || !connected || IDEMPOTENT.has(req.method ?? '');
      const refused = err.code === 'ECONNREFUSED';
      done({ ok: false, reason: `${err.code ?? 'error'}: ${err.message}`, penalize: !stale, retry: resend, refused });
    });
    upstreamReq.end(body && body.length > 0 ? body : undefined);
  });
}

/**
 * Forwards one authenticated absolute-URI request and writes the answer to `res`.
 *
 * @param steering - what the client's username asked for (its session)
 */
export async function forwardHttp(
  router: FleetRouter,
  agents: UpstreamAgents,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  steering: Steering,
  options: ForwardOptions,
): Promise<void> {
  const session = steering.session;
  let target: URL;
  try {
    target = new URL(req.url ?? '');
  } catch {
    router.metrics.failure();
    return gatewayError(res, 400, 'send absolute-URI requests (http://host/path) or CONNECT, as to any HTTP proxy');
  }
  if (target.protocol !== 'http:') {
    router.metrics.failure();
    return gatewayError(res, 400, `only http: URLs are forwarded as requests; use CONNECT for ${target.protocol}`);
  }
  const body = hasBody(req.headers) ? await readBody(req) : undefined;
  if (body === null) return;
  if (hasBody(req.headers) && body === undefined) {
    router.metrics.failure();
    return gatewayError(res, 413, `request bodies above ${MAX_BODY_BYTES} bytes are not forwarded`);
  }
  const headers = endToEndHeaders(req.rawHeaders, REFRAMED);
  // With array headers Node adds no Host of its own (it would have been the proxy's address).
  if (req.headers.host === undefined) headers.push('Host', target.host);
  if (body !== undefined || !UNFRAMED_WITHOUT_BODY.has(req.method ?? ''))
    headers.push('Content-Length', String(body?.length ?? 0));
  let clientGone = false;
  res.once('close', () => (clientGone = !res.writableFinished));
  const pick = { session, strict: steering.strict, sessionIdleMs: steering.sessionIdleMs };
  const routed = await router.route({ ...pick, domain: target.hostname }, (u) =>
    clientGone
      ? Promise.resolve({ ok: false as const, reason: 'the client went away', penalize: false, retry: false })
      : attemptOnce(u, req, headers, body, agents, options),
  );
  const answer = routed.ok ? routed.value : routed.fallback;
  const upstream = routed.upstream;
  if (!answer || !upstream) {
    router.metrics.failure();
    return gatewayError(
      res,
      502,
      `no fleet proxy could forward this request: ${routed.ok ? '' : routed.reasons.join('; ')}`,
    );
  }
  const { response } = answer;
  const use = { proxy: upstream.name, domain: target.hostname, session };
  let received = 0;
  response.on('data', (c: Buffer) => (received += c.length));
  response.once('end', () => router.metrics.bytes(use, received, body?.length ?? 0));
  res.writeHead(response.statusCode ?? 502, response.statusMessage, endToEndHeaders(response.rawHeaders));
  response.pipe(res);
  res.once('close', () => {
    if (!response.complete) response.destroy();
  });
}
