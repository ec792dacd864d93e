/**
 * SOCKS5 in front of the fleet (RFC 1928, with RFC 1929 username/password carrying the username
 * grammar): CONNECT to a domain, IPv4 or IPv6 address, tunnelled through a fleet proxy's HTTP
 * CONNECT. The wire parsing is pure; `serveSocks5` runs one client connection.
 */
import net from 'node:net';
import type { AuthResult } from './auth.js';
import { GrammarError, type Steering } from './grammar.js';
import type { FleetRouter } from './router.js';
import { routeTunnel, splice, type TunnelCause } from './tunnel.js';

/** RFC 1928 §6 reply codes. */
export const REPLY = {
  succeeded: 0x00,
  generalFailure: 0x01,
  notAllowed: 0x02,
  networkUnreachable: 0x03,
  hostUnreachable: 0x04,
  connectionRefused: 0x05,
  ttlExpired: 0x06,
  commandNotSupported: 0x07,
  addressTypeNotSupported: 0x08,
} as const;

const VERSION = 0x05;
/** RFC 1928 §3 methods. */
const NO_AUTH = 0x00;
const USER_PASS = 0x02;
const NO_ACCEPTABLE = 0xff;
/** RFC 1929 sub-negotiation version. */
const AUTH_VERSION = 0x01;
const CMD_CONNECT = 0x01;
const ATYP_IPV4 = 0x01;
const ATYP_DOMAIN = 0x03;
const ATYP_IPV6 = 0x04;
/** A client that has not finished its request by then is dropped. */
const HANDSHAKE_TIMEOUT_MS = 10_000;

/** A parse of the bytes so far: more are needed, the message is broken, or it is complete. */
export type Parsed<T> = { done: false } | { done: true; error: string } | { done: true; value: T; length: number };

const more = { done: false } as const;

/** RFC 1928 §3: VER NMETHODS METHODS. */
export function parseGreeting(buf: Buffer): Parsed<{ methods: number[] }> {
  if (buf.length < 2) return more;
  if (buf[0] !== VERSION) return { done: true, error: `not SOCKS5 (version ${buf[0]})` };
  const n = buf[1] ?? 0;
  if (n === 0) return { done: true, error: 'the greeting offers no method' };
  if (buf.length < 2 + n) return more;
  return { done: true, value: { methods: [...buf.subarray(2, 2 + n)] }, length: 2 + n };
}

/** RFC 1929 §2: VER ULEN UNAME PLEN PASSWD. */
export function parseUserPass(buf: Buffer): Parsed<{ user: string; password: string }> {
  if (buf.length < 2) return more;
  if (buf[0] !== AUTH_VERSION) return { done: true, error: `username/password version ${buf[0]} (want 1)` };
  const ulen = buf[1] ?? 0;
  if (buf.length < 2 + ulen + 1) return more;
  const plen = buf[2 + ulen] ?? 0;
  const length = 3 + ulen + plen;
  if (buf.length < length) return more;
  const user = buf.subarray(2, 2 + ulen).toString('utf8');
  const password = buf.subarray(3 + ulen, length).toString('utf8');
  return { done: true, value: { user, password }, length };
}

/** A request's command and destination; `reply` set when it must be refused with that code. */
export interface SocksRequest {
  command: number;
  host: string;
  port: number;
  reply?: number;
}

/** RFC 1928 §4: VER CMD RSV ATYP DST.ADDR DST.PORT. */
export function parseRequest(buf: Buffer): Parsed<SocksRequest> {
  if (buf.length < 5) return more;
  if (buf[0] !== VERSION) return { done: true, error: `request version ${buf[0]} (want 5)` };
  const command = buf[1] ?? 0;
  const atyp = buf[3];
  let host: string;
  let at: number;
  if (atyp === ATYP_IPV4) {
    if (buf.length < 10) return more;
    host = [...buf.subarray(4, 8)].join('.');
    at = 8;
  } else if (atyp === ATYP_IPV6) {
    if (buf.length < 22) return more;
    const words: string[] = [];
    for (let i = 0; i < 8; i++) words.push(buf.readUInt16BE(4 + 2 * i).toString(16));
    // Through URL's serializer: the canonical, compressed form (RFC 5952).
    host = new URL(`http://[${words.join(':')}]/`).hostname.replace(/^\[|\]$/g, '');
    at = 20;
  } else if (atyp === ATYP_DOMAIN) {
    const len = buf[4] ?? 0;
    if (buf.length < 5 + len + 2) return more;
    host = buf.subarray(5, 5 + len).toString('latin1');
    at = 5 + len;
    if (len === 0 || !/^[A-Za-z0-9._-]+$/.test(host))
      return { done: true, value: { command, host, port: 0, reply: REPLY.hostUnreachable }, length: at + 2 };
  } else {
    // The length of an unknown address is unknown: nothing after it can be read.
    return {
      done: true,
      value: { command, host: '', port: 0, reply: REPLY.addressTypeNotSupported },
      length: buf.length,
    };
  }
  const port = buf.readUInt16BE(at);
  const length = at + 2;
  if (command !== CMD_CONNECT)
    return { done: true, value: { command, host, port, reply: REPLY.commandNotSupported }, length };
  if (port === 0) return { done: true, value: { command, host, port, reply: REPLY.hostUnreachable }, length };
  return { done: true, value: { command, host, port }, length };
}

/** A reply with BND.ADDR 0.0.0.0:0: the bound address is the fleet proxy's, which the gateway does not know. */
export function reply(code: number): Buffer {
  return Buffer.from([VERSION, code, 0x00, ATYP_IPV4, 0, 0, 0, 0, 0, 0]);
}

/**
 * The reply for a tunnel that could not be opened.
 *
 * @param cause - of the last attempt; undefined when no fleet proxy matched (nothing to reach the network through)
 */
export function replyFor(cause: TunnelCause | undefined): number {
  if (cause === undefined) return REPLY.networkUnreachable;
  if (cause.kind === 'timeout') return REPLY.ttlExpired;
  if (cause.kind === 'hop') return REPLY.generalFailure;
  // The fleet proxy's answer for the target: 403 its policy (tinyproxy's ConnectPort), 404 no such host.
  if (cause.status === 403) return REPLY.notAllowed;
  if (cause.status === 404) return REPLY.hostUnreachable;
  return REPLY.connectionRefused;
}

/** What a SOCKS5 connection needs from the gateway. */
export interface SocksDeps {
  check: (user: string, password: string) => AuthResult;
  /** Whether this client may connect without credentials (the loopback allow-list). */
  noAuth: (remoteAddress: string | undefined) => boolean;
  routerFor: (steering: Steering) => Promise<FleetRouter>;
  connectTimeoutMs: number;
  onRefused: (why: string) => void;
}

/**
 * Runs the SOCKS5 exchange on `client` (its first bytes already unshifted), then the tunnel.
 * Any broken message closes the connection; refusals get their reply first.
 */
export function serveSocks5(client: net.Socket, deps: SocksDeps): void {
  let buffered: Buffer = Buffer.alloc(0);
  let stage: 'greeting' | 'auth' | 'request' | 'routing' = 'greeting';
  let steering: Steering = { strict: false };
  const timer = setTimeout(() => client.destroy(), HANDSHAKE_TIMEOUT_MS);
  const close = (why: string, bytes?: Buffer) => {
    deps.onRefused(why);
    clearTimeout(timer);
    client.off('data', onData);
    if (bytes) client.end(bytes);
    else client.destroy();
  };
  client.on('error', () => client.destroy());
  client.once('close', () => clearTimeout(timer));

  const step = (): boolean => {
    if (stage === 'greeting') {
      const p = parseGreeting(buffered);
      if (!p.done) return false;
      if ('error' in p) return (close(p.error), false);
      buffered = buffered.subarray(p.length);
      if (p.value.methods.includes(USER_PASS)) {
        client.write(Buffer.from([VERSION, USER_PASS]));
        stage = 'auth';
      } else if (p.value.methods.includes(NO_AUTH) && deps.noAuth(client.remoteAddress)) {
        client.write(Buffer.from([VERSION, NO_AUTH]));
        stage = 'request';
      } else {
        return (close('no acceptable authentication method', Buffer.from([VERSION, NO_ACCEPTABLE])), false);
      }
      return true;
    }
    if (stage === 'auth') {
      const p = parseUserPass(buffered);
      if (!p.done) return false;
      if ('error' in p) return (close(p.error), false);
      buffered = buffered.subarray(p.length);
      const auth = deps.check(p.value.user, p.value.password);
      if (!auth.ok)
        return (close(auth.grammar?.message ?? 'wrong credentials', Buffer.from([AUTH_VERSION, 0x01])), false);
      steering = auth.steering;
      client.write(Buffer.from([AUTH_VERSION, 0x00]));
      stage = 'request';
      return true;
    }
    if (stage === 'request') {
      const p = parseRequest(buffered);
      if (!p.done) return false;
      if ('error' in p) return (close(p.error), false);
      const head = buffered.subarray(p.length);
      buffered = Buffer.alloc(0);
      if (p.value.reply !== undefined)
        return (close(`request refused (${p.value.reply})`, reply(p.value.reply)), false);
      stage = 'routing';
      clearTimeout(timer);
      client.off('data', onData);
      client.pause();
      void connect(p.value, head);
      return false;
    }
    return false;
  };

  const connect = async (request: SocksRequest, head: Buffer) => {
    let router: FleetRouter;
    try {
      router = await deps.routerFor(steering);
    } catch (err) {
      const refusal = err instanceof GrammarError ? REPLY.notAllowed : REPLY.generalFailure;
      return close(err instanceof Error ? err.message : String(err), reply(refusal));
    }
    const { routed, cause } = await routeTunnel(router, steering, request, client, deps.connectTimeoutMs);
    if (!routed.ok) return close(routed.reasons.join('; '), reply(replyFor(cause)));
    if (client.destroyed) return routed.value.socket.destroy();
    const use = { proxy: routed.upstream.name, domain: request.host, session: steering.session };
    splice(router.metrics, client, head, routed.value, use, reply(REPLY.succeeded));
    client.resume();
  };

  const onData = (chunk: Buffer) => {
    buffered = buffered.length === 0 ? chunk : Buffer.concat([buffered, chunk]);
    if (buffered.length > 1024) return close('handshake too long');
    while (step());
  };
  client.on('data', onData);
}
