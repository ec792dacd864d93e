/** One CONNECT tunnel through one fleet proxy: dial (over TLS, pinned, when it has a TLS listener), send CONNECT with the proxy's credentials, read its answer. */
import net from 'node:net';
import { connectPinned } from '../shared/tls/pinned.js';
import type { Attempt } from './router.js';
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

/** An established tunnel: the socket to the target through the proxy, and any bytes read past the proxy's answer. */
export interface Tunnel {
  socket: net.Socket;
  head: Buffer;
}

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
export function connectThrough(upstream: Upstream, authority: string, timeoutMs: number): Promise<Attempt<Tunnel>> {
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
    const fail = (reason: string, penalize: boolean, retry: boolean, refused = false) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ok: false, reason, penalize, retry, refused });
    };
    const timer = setTimeout(() => fail(`no tunnel within ${timeoutMs} ms`, true, true), timeoutMs);
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
        fail(`the proxy answered CONNECT with ${status} (the target is unreachable from it)`, false, false);
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
