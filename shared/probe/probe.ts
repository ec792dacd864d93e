/** Probes a proxy from the outside: a CONNECT tunnel with its credentials to an echo endpoint, over TLS when it has a TLS listener. */
import http from 'node:http';
import type { Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import { z } from 'zod';
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { Health } from '../domain/status.js';
import { recordProbe } from '../telemetry/metrics.js';
import { inSpan } from '../telemetry/spans.js';
import { connectPinned, TlsPinError } from '../tls/pinned.js';

/** What one probe observed. `error` never contains credentials. */
export interface ProbeResult {
  ok: boolean;
  /** Wall time of the whole probe (connect, CONNECT, GET), in milliseconds. */
  latencyMs: number;
  /** The address the echo endpoint saw: the proxy's egress IP. */
  egressIp?: string;
  error?: string;
  /** The HTTP status of the step that failed (CONNECT or GET), or 200 on success. */
  status?: number;
  /** Probed over TLS: the certificate the listener presented (it matched the pin, if one was given). */
  tlsFingerprint?: string;
}

/** Where to probe and how long to wait. */
export interface ProbeOptions {
  host: string;
  port: number;
  username: string;
  password: string;
  /** `http://` or `https://` URL answering `{"ip": "..."}` with the caller's address. */
  echoUrl: string;
  timeoutMs: number;
  /**
   * Probe through the instance's TLS listener on `port` instead of the plain one: the credentials
   * go only over a session whose certificate matches `fingerprint` (absent: the first probe of the
   * instance, which learns it).
   */
  tls?: { port: number; fingerprint?: string | undefined } | undefined;
}

const echoBody = z.object({ ip: z.string().min(1).max(64) });

/** How every failure begins in which no TCP connection to the proxy was made (refused, unroutable, or none within the timeout). */
const NOT_REACHED = 'cannot reach proxy';

/**
 * Whether a probe's error says the proxy itself was never reached. Every other failure (407, an
 * answer to CONNECT other than 200, a failed echo request, a timeout after the connection was
 * made) happened at or behind a proxy that answered: its credentials, its way out or the echo
 * endpoint, not the path to it.
 */
export function proxyNotReached(error: string | undefined): boolean {
  return error?.startsWith(NOT_REACHED) === true;
}
const MAX_BODY_BYTES = 64 * 1024;

/**
 * Opens an HTTP CONNECT tunnel through the proxy (with `Proxy-Authorization: Basic …`) to the
 * echo endpoint and GETs it over the tunnel. A non-200 answer to CONNECT (407 for bad
 * credentials) is a failure, and so is a timeout. Never throws and never logs.
 *
 * @example
 * const r = await probeThroughProxy({ host: '10.0.0.5', port: 3128, username, password,
 *   echoUrl: 'http://echo.internal/', timeoutMs: 3000 });
 * if (r.ok) console.log(r.egressIp, r.latencyMs);
 */
export function probeThroughProxy(opts: ProbeOptions): Promise<ProbeResult> {
  // The span names where the probe went, never with what credentials.
  const attributes = { 'server.address': opts.host, 'server.port': opts.port, 'url.full': opts.echoUrl };
  return inSpan('probe', { kind: SpanKind.CLIENT, attributes }, async (span) => {
    const result = await probeOnce(opts);
    span.setAttributes({ 'egress.probe.ok': result.ok, 'egress.probe.latency_ms': result.latencyMs });
    if (result.status !== undefined) span.setAttribute('http.response.status_code', result.status);
    if (result.egressIp) span.setAttribute('egress.probe.egress_ip', result.egressIp);
    if (!result.ok) span.setStatus({ code: SpanStatusCode.ERROR, message: result.error ?? 'probe failed' });
    recordProbe(result.ok, result.latencyMs);
    return result;
  });
}

function probeOnce(opts: ProbeOptions): Promise<ProbeResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise<ProbeResult>((resolve) => {
    const sockets: Array<{ destroy(): unknown }> = [];
    let settled = false;
    // Over TLS: the certificate presented, also when it did not match the pin.
    let tlsFingerprint: string | undefined;
    const finish = (result: Omit<ProbeResult, 'latencyMs'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      for (const s of sockets) s.destroy();
      resolve({ ...result, ...(tlsFingerprint !== undefined && { tlsFingerprint }), latencyMs: elapsed() });
    };
    const fail = (error: string, status?: number) =>
      finish(status === undefined ? { ok: false, error } : { ok: false, error, status });
    // Whether the TCP connection to the proxy was made: a timeout before it is the path's fault.
    let connected = false;
    // setImmediate: a connection made while the event loop was busy is seen (poll phase) first.
    const timer = setTimeout(
      () =>
        setImmediate(() =>
          fail(
            connected
              ? `timed out after ${opts.timeoutMs} ms`
              : `${NOT_REACHED} ${opts.host}:${port}: no connection within ${opts.timeoutMs} ms`,
          ),
        ),
      opts.timeoutMs,
    );

    let target: URL;
    try {
      target = new URL(opts.echoUrl);
      if (target.protocol !== 'http:' && target.protocol !== 'https:') throw new Error('not http(s)');
    } catch {
      fail('echoUrl is not an http(s) URL');
      return;
    }
    const secure = target.protocol === 'https:';
    const targetPort = Number(target.port || (secure ? 443 : 80));
    // URL.hostname keeps IPv6 brackets, which is what a CONNECT authority needs.
    const authority = `${target.hostname}:${targetPort}`;
    const token = Buffer.from(`${opts.username}:${opts.password}`).toString('base64');
    const { tls: overTls } = opts;
    const port = overTls?.port ?? opts.port;

    const connect = http.request({
      host: opts.host,
      port,
      method: 'CONNECT',
      path: authority,
      headers: { host: authority, 'proxy-authorization': `Basic ${token}` },
      // Over TLS the request gets its socket once the certificate matched: the credentials never
      // go to a listener that presents another one.
      ...(overTls
        ? {
            createConnection: (_: unknown, ready: (err: Error | null, socket: Socket) => void) => {
              const pinned = { host: opts.host, port, fingerprint: overTls.fingerprint };
              const socket = connectPinned(pinned, (err, secure, seen) => {
                tlsFingerprint = err instanceof TlsPinError ? err.presented : seen;
                ready(err, secure);
              });
              sockets.push(socket);
              socket.once('connect', () => (connected = true));
              return undefined;
            },
          }
        : { agent: false }),
    });
    sockets.push(connect);
    connect.on('socket', (socket) => {
      if (!socket.connecting) connected = true;
      else socket.once('connect', () => (connected = true));
    });
    connect.on('error', (err) =>
      fail(
        connected ? `proxy connection failed: ${err.message}` : `${NOT_REACHED} ${opts.host}:${port}: ${err.message}`,
      ),
    );
    // Node reports every answer to CONNECT as 'connect'; 'response' is handled for safety.
    connect.on('response', (res) => fail(`proxy answered ${res.statusCode ?? 0} to CONNECT`, res.statusCode));
    connect.on('connect', (res, socket, head) => {
      sockets.push(socket);
      if (res.statusCode !== 200) {
        fail(`proxy answered ${res.statusCode ?? 0} to CONNECT`, res.statusCode);
        return;
      }
      if (head.length > 0) socket.unshift(head);
      getOverTunnel(socket, target, secure, sockets, finish, fail);
    });
    connect.end();
  });
}

function getOverTunnel(
  socket: Socket,
  target: URL,
  secure: boolean,
  sockets: Array<{ destroy(): unknown }>,
  finish: (result: Omit<ProbeResult, 'latencyMs'>) => void,
  fail: (error: string, status?: number) => void,
): void {
  const servername = target.hostname.replace(/^\[|\]$/g, '');
  const stream = secure ? tls.connect({ socket, servername }) : socket;
  if (secure) sockets.push(stream);
  const req = http.request({
    createConnection: () => stream,
    method: 'GET',
    path: `${target.pathname}${target.search}`,
    headers: { host: target.host, connection: 'close', accept: 'application/json' },
  });
  sockets.push(req);
  req.on('error', (err) => fail(`echo request through the tunnel failed: ${err.message}`));
  req.on('response', (res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) fail('echo response is too large');
      else chunks.push(chunk);
    });
    res.on('error', (err) => fail(`echo response failed: ${err.message}`));
    res.on('end', () => {
      const status = res.statusCode ?? 0;
      if (status !== 200) {
        fail(`echo endpoint answered ${status}`, status);
        return;
      }
      let json: unknown;
      try {
        json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      } catch {
        fail('echo response is not JSON', status);
        return;
      }
      const parsed = echoBody.safeParse(json);
      if (!parsed.success) fail('echo response has no "ip"', status);
      else finish({ ok: true, egressIp: parsed.data.ip, status });
    });
  });
  req.end();
}

/**
 * The health after one more probe: `consecutiveFailures` counts failures in a row and resets on
 * success. The egress IP is the one this probe saw (absent when it failed).
 *
 * @param previous - the health before this probe, if any
 * @param result - this probe's result
 * @param now - when the probe finished
 */
export function nextHealth(previous: Health | undefined, result: ProbeResult, now: Date): Health {
  const health: Health = {
    lastProbeAt: now.toISOString(),
    ok: result.ok,
    latencyMs: result.latencyMs,
    consecutiveFailures: result.ok ? 0 : (previous?.consecutiveFailures ?? 0) + 1,
  };
  // Only keys with values: Firestore rejects `undefined`.
  if (result.egressIp !== undefined) health.egressIp = result.egressIp;
  if (result.tlsFingerprint !== undefined) health.tlsFingerprint = result.tlsFingerprint;
  if (!result.ok) health.error = result.error ?? 'probe failed';
  return health;
}
