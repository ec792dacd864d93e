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

/**
 * The check of `Proxy-Authorization` headers against the gateway's credentials. The expected
 * SHA-256 digest is computed once, here; each request then costs one digest of what it presents
 * (the user name without its `-session-<id>`, and the password), compared with `timingSafeEqual`
 * over equal lengths, so neither the content nor the length of a wrong guess shows in the time taken.
 *
 * @param expected - the gateway's credentials
 * @returns a function of the header as received (absent, or not Basic, fails): ok with the session
 *   id when the username is `USER-session-<id>`
 * @example
 * const check = credentialCheck({ username: 'crawler', password: 's3cret' });
 * check(req.headers['proxy-authorization']); // { ok: true, session: 'cart42' } for crawler-session-cart42
 */
export function credentialCheck(expected: GatewayCredentials): (header: string | undefined) => AuthResult {
  const want = digest(`${expected.username}:${expected.password}`);
  // A configured name that itself reads as `USER-session-<id>` is also compared whole: only then
  // does a request cost a second digest (decided by the configuration, not by the guess).
  const nameLooksLikeSession = SESSION.test(expected.username);
  return (header) => {
    const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
    const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
    const colon = decoded.indexOf(':');
    const user = colon >= 0 ? decoded.slice(0, colon) : '';
    const password = colon >= 0 ? decoded.slice(colon + 1) : '';
    const session = SESSION.exec(user);
    const whole = nameLooksLikeSession && timingSafeEqual(digest(`${user}:${password}`), want);
    const base = timingSafeEqual(digest(`${session?.[1] ?? user}:${password}`), want);
    if (match === null || colon < 0 || !(whole || base)) return { ok: false };
    return { ok: true, session: whole ? undefined : session?.[2] };
  };
}

/** The URL clients use: `http://USER:PASS@host:port` (user and password percent-encoded). */
export function gatewayUrl(credentials: GatewayCredentials, host: string, port: number): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return `http://${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@${h}:${port}`;
}
