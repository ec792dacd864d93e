/** The gateway's own Basic credentials: parsing `Proxy-Authorization`, the constant-time check, sessions in the username. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** The user name and password a client must present (`http://USER:PASS@host:port`). */
export interface GatewayCredentials {
  username: string;
  password: string;
}

/** Outcome of checking one request's credentials. */
export type AuthResult = { ok: false } | { ok: true; session: string | undefined };

/** `USER-session-<id>`: ids are 1–64 of letters, digits, `_`, `.` and `-`. */
const SESSION = /^(.*)-session-([A-Za-z0-9_.-]{1,64})$/;

/** Fresh random credentials (URL-safe, so the printed URL needs no escaping). */
export function randomCredentials(): GatewayCredentials {
  return { username: `gw${randomBytes(3).toString('hex')}`, password: randomBytes(18).toString('base64url') };
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** The digest of each credentials object, computed once rather than on every request. */
const expectedDigests = new WeakMap<GatewayCredentials, Buffer>();
function expectedDigest(expected: GatewayCredentials): Buffer {
  let d = expectedDigests.get(expected);
  if (!d) {
    d = digest(`${expected.username}:${expected.password}`);
    expectedDigests.set(expected, d);
  }
  return d;
}

/**
 * Checks a `Proxy-Authorization` header against the gateway's credentials. The comparison runs
 * over SHA-256 digests of equal length with `timingSafeEqual`, so neither the content nor the
 * length of a wrong guess shows in the time taken.
 *
 * @param header - the header as received (absent, or not Basic, fails)
 * @param expected - the gateway's credentials
 * @returns ok with the session id when the username is `USER-session-<id>`
 */
export function checkProxyAuthorization(header: string | undefined, expected: GatewayCredentials): AuthResult {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  const user = colon >= 0 ? decoded.slice(0, colon) : '';
  const password = colon >= 0 ? decoded.slice(colon + 1) : '';
  const session = SESSION.exec(user);
  const want = expectedDigest(expected);
  // Both readings are compared every time, so a user name holding "-session-" itself still works.
  const whole = timingSafeEqual(digest(`${user}:${password}`), want);
  const base = timingSafeEqual(digest(`${session?.[1] ?? user}:${password}`), want);
  if (match === null || colon < 0 || !(whole || base)) return { ok: false };
  return { ok: true, session: whole ? undefined : session?.[2] };
}

/** The URL clients use: `http://USER:PASS@host:port` (user and password percent-encoded). */
export function gatewayUrl(credentials: GatewayCredentials, host: string, port: number): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return `http://${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@${h}:${port}`;
}
