/**
 * Tunnels through the fleet: one CONNECT through one fleet proxy (dial, over TLS pinned to its
 * fingerprint when it has a TLS listener; send CONNECT with the proxy's credentials; read its
 * answer), routed with failover, and spliced to the client. HTTP CONNECT and SOCKS5 clients both
 * come through here.
 */
import net from 'node:net';
import { connectPinned } from '../shared/tls/pinned.js';
import type { Steering } from './grammar.js';
import type { UsageRecorder, Use } from './metrics.js';
import type { Attempt, FleetRouter, Routed } from './router.js';
import type { Upstream } from './selection.js';

/** Statuses of a proxy's answer that say the proxy hop failed, not the target: try another proxy. */
export const HOP_FAILURES = new Set([407, 502, 503, 504]);
/**
 * A CONNECT answer is always the proxy's own, so a 401 there is the proxy refusing the credentials:
 * tinyproxy (every backend's proxy) answers wrong credentials with 401 where RFC 9110 wants 407.
 * The gateway meets it when its list is stale and another proxy now listens at an old address.
 */
const CONNECT_HOP_FAILURES = new Set([401, ...HOP_FAILURES]);
const CREDENTIALS_REFUSED = new Set([401, 407]);
const MAX_HEAD = 16 * 1024;
const HOP: TunnelCause = { kind: 'hop' };

/** An established tunnel: the socket to the target through the proxy, and any bytes read past the proxy's answer. */
export interface Tunnel {
  socket: net.Socket;
  head: Buffer;
}

/**
 * Why a tunnel was not opened, as a SOCKS5 reply needs to know it: the proxy hop failed (`hop`),
 * no answer in time (`timeout`), or the proxy answered for the target (`target`, with its status).
 */
export type TunnelCause = { kind: 'hop' } | { kind: 'timeout' } | { kind: 'target'; status: number };

/** One attempt's outcome, with the cause of a failure. */
export type TunnelAttempt = Attempt<Tunnel> & { cause?: TunnelCause };

/** `host:port` of a CONNECT request line, or undefined when it is not one (`[v6]:port` allowed). */
export function parseAuthority(authority: string): { host: string; port: number } | undefined {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s:/@[\]]+):(\d{1,5})$/.exec(authority);
  const port = Number(m?.[2]);
  if (!m?.[1] || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { host: m[1].replace(/^\[|\]$/g, ''), port };
}

/**
 * Opens a tunnel to `authority` through `upstream`.
 *
 * @param timeoutMs - for the dial and the proxy's answer together
 * @returns the tunnel, or why not (refused, timed out, dropped, or the proxy's status)
 */
export function connectThrough(upstream: Upstream, authority: string, timeoutMs: number): Promise<TunnelAttempt> {
  return new Promise((resolve) => {
    const sendConnect = () =>
      socket.write(
        `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${upstream.authorization}\r\n\r\n`,
      );
    const { host, port, tls } = upstream;
    // Over TLS the credentials go out once the certificate matched the pinned fingerprint.
    const socket: net.Socket = tls
      ? connectPinned({ host, port, fingerprint: tls.fingerprint }, (err) => (err ? onError(err) : sendConnect()))
      : net.connect({ host, port }).once('connect', sendConnect);
    socket.setNoDelay(true);
    let buffered: Buffer = Buffer.alloc(0);
    let settled = false;
    const fail = (reason: string, penalize: boolean, retry: boolean, refused = false, cause: TunnelCause = HOP) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ok: false, reason, penalize, retry, refused, cause });
    };
    const timer = setTimeout(
      () => fail(`no tunnel within ${timeoutMs} ms`, true, true, false, { kind: 'timeout' }),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
      const end = buffered.indexOf('\r\n\r\n');
      if (end < 0) {
        if (buffered.length > MAX_HEAD) fail('the proxy answered CONNECT with an oversized head', true, true);
        return;
      }
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(buffered.subarray(0, end).toString('latin1'))?.[1]);
      if (status >= 200 && status < 300) {
        settled = true;
        clearTimeout(timer);
        socket.off('data', onData);
        socket.off('error', onError);
        socket.off('close', onClose);
        socket.pause();
        resolve({ ok: true, value: { socket, head: buffered.subarray(end + 4) } });
      } else if (CONNECT_HOP_FAILURES.has(status)) {
        // A refusal of the credentials: another proxy of the fleet now listens at this address.
        fail(`the proxy answered CONNECT with ${status}`, true, true, CREDENTIALS_REFUSED.has(status));
      } else if (Number.isNaN(status)) {
        fail('the proxy answered CONNECT with something that is not HTTP/1.x', true, true);
      } else {
        // 403, 404 (no such host), 500 (target refused): the target's side, the same through any proxy.
        fail(`the proxy answered CONNECT with ${status} (the target is unreachable from it)`, false, false, false, {
          kind: 'target',
          status,
        });
      }
    };
    const onError = (err: NodeJS.ErrnoException) =>
      fail(`${err.code ?? 'error'}: ${err.message}`, true, true, err.code === 'ECONNREFUSED');
    const onClose = () => fail('the tunnel was dropped before it was established', true, true);
    socket.on('data', onData);
    socket.on('error', onError);
    socket.on('close', onClose);
  });
}

/** `host:port` for a CONNECT line (`[v6]:port` for an IPv6 address). */
export function authorityOf(host: string, port: number): string {
  return `${net.isIPv6(host) ? `[${host}]` : host}:${port}`;
}

/** The outcome of routing a tunnel, with the cause of the last failed attempt. */
export interface RoutedTunnel {
  routed: Routed<Tunnel>;
  /** Undefined when no attempt was made (no fleet proxy matched) or the last one succeeded. */
  cause: TunnelCause | undefined;
}

/**
 * Opens a tunnel to `host:port` through the fleet, with failover.
 *
 * @param client - the client's socket (no further attempt once it is gone)
 */
export async function routeTunnel(
  router: FleetRouter,
  steering: Steering,
  target: { host: string; port: number },
  client: net.Socket,
  timeoutMs: number,
): Promise<RoutedTunnel> {
  const authority = authorityOf(target.host, target.port);
  let cause: TunnelCause | undefined;
  const routed = await router.route(
    { session: steering.session, strict: steering.strict, sessionIdleMs: steering.sessionIdleMs, domain: target.host },
    async (u): Promise<Attempt<Tunnel>> => {
      if (client.destroyed) return { ok: false, reason: 'the client went away', penalize: false, retry: false };
      const attempt = await connectThrough(u, authority, timeoutMs);
      cause = attempt.ok ? undefined : attempt.cause;
      return attempt;
    },
  );
  return { routed, cause };
}

/**
 * Splices an established tunnel to the client, after writing `established` (the HTTP 200 line or
 * the SOCKS5 success reply), and counts its bytes when it ends.
 */
export function splice(
  metrics: UsageRecorder,
  client: net.Socket,
  head: Buffer,
  tunnel: Tunnel,
  use: Use,
  established: string | Buffer,
): void {
  const upstream = tunnel.socket;
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  upstream.on('error', end);
  client.on('error', end);
  upstream.once('close', () => {
    metrics.bytes(use, upstream.bytesRead, upstream.bytesWritten);
    client.destroy();
  });
  client.once('close', () => upstream.destroy());
  client.write(established);
  if (tunnel.head.length > 0) client.write(tunnel.head);
  if (head.length > 0) upstream.write(head);
  upstream.pipe(client);
  client.pipe(upstream);
  upstream.resume();
}
