/**
 * The TLS identity of a fleet proxy's TLS listener (stunnel in front of tinyproxy): its certificate
 * is self-signed per instance, so clients check it by fingerprint, learnt once and pinned.
 */
import { createHash } from 'node:crypto';
import tls from 'node:tls';

/** The fingerprint of a DER certificate (`PeerCertificate.raw`). */
export function fingerprintOf(der: Buffer): string {
  return createHash('sha256').update(der).digest('hex');
}

/** The listener presented a certificate other than the pinned one: nothing was sent to it. */
export class TlsPinError extends Error {
  override readonly name = 'TlsPinError';
  constructor(
    readonly pinned: string,
    readonly presented: string,
  ) {
    super(`TLS certificate changed: pinned sha256 ${pinned}, presented ${presented}`);
  }
}

/** Where to connect, and the fingerprint to insist on (absent: learn it, trust on first use). */
export interface PinnedTarget {
  host: string;
  port: number;
  fingerprint?: string | undefined;
  /** The TCP connect and the handshake together; absent: no limit here. */
  timeoutMs?: number | undefined;
}

/**
 * Opens a TLS connection and hands it over only once the peer's certificate matched the pin: a
 * caller writes nothing (no `Proxy-Authorization`) before `onReady`. The chain is not verified
 * (the certificate is self-signed); the fingerprint is the whole check. No SNI: an IP address.
 *
 * @param onReady - once: the socket and the fingerprint it presented, or the error (a
 *   {@link TlsPinError} on a mismatch; the socket is then destroyed)
 * @returns the socket, still connecting (its `connect` event says the TCP connection was made)
 */
export function connectPinned(
  target: PinnedTarget,
  onReady: (err: Error | null, socket: tls.TLSSocket, fingerprint?: string) => void,
): tls.TLSSocket {
  const socket = tls.connect({ host: target.host, port: target.port, rejectUnauthorized: false });
  socket.setNoDelay(true);
  let done = false;
  const finish = (err: Error | null, fingerprint?: string) => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    socket.off('error', finish);
    if (err) socket.destroy();
    onReady(err, socket, fingerprint);
  };
  const timer =
    target.timeoutMs === undefined
      ? undefined
      : setTimeout(() => finish(new Error(`no TLS session within ${target.timeoutMs} ms`)), target.timeoutMs);
  socket.once('error', finish);
  socket.once('secureConnect', () => {
    const der = socket.getPeerCertificate().raw as Buffer | undefined;
    if (!der) return finish(new Error('the TLS listener presented no certificate'));
    const presented = fingerprintOf(der);
    if (target.fingerprint !== undefined && presented !== target.fingerprint)
      return finish(new TlsPinError(target.fingerprint, presented));
    finish(null, presented);
  });
  return socket;
}
