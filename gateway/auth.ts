/** The gateway's own credentials: parsing `Proxy-Authorization`, the constant-time check, then the username grammar. */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { GrammarError, parseSteering, type Steering } from './grammar.js';

/** The user name and password a client must present (`http://USER:PASS@host:port`). */
export interface GatewayCredentials {
  username: string;
  password: string;
}

/**
 * Outcome of checking one set of credentials: refused (with the grammar error when USER and the
 * password were right but a key was not), or accepted with what the username asks for.
 */
export type AuthResult = { ok: false; grammar?: GrammarError } | { ok: true; steering: Steering };

/** Fresh random credentials (URL-safe, so the printed URL needs no escaping). */
export function randomCredentials(): GatewayCredentials {
  return { username: `gw${randomBytes(3).toString('hex')}`, password: randomBytes(18).toString('base64url') };
}

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/** The user name and password of a `Proxy-Authorization: Basic …` header, or undefined. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  const decoded = match?.[1] ? Buffer.from(match[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (match === null || colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}

/**
 * The check of a user name and password against the gateway's credentials. USER is the first as
 * many hyphen-separated words of the presented name as the configured name has (so a configured
 * name that itself contains `-session-` still works); the rest is the grammar (grammar.ts). The
 * expected SHA-256 digest is computed once, here; each check then costs one digest of USER and
 * the password, compared with `timingSafeEqual` over equal lengths, so neither the content nor
 * the length of a wrong guess shows in the time taken. The grammar is read only after the
 * credentials matched: a client without them learns nothing of it.
 *
 * @param expected - the gateway's credentials
 * @returns a function of the user name and password as received
 * @example
 * const check = credentialCheck({ username: 'crawler', password: 's3cret' });
 * check('crawler-session-cart42', 's3cret'); // { ok: true, steering: { session: 'cart42', strict: false } }
 */
export function credentialCheck(expected: GatewayCredentials): (user: string, password: string) => AuthResult {
  const want = digest(`${expected.username}:${expected.password}`);
  const words = expected.username.split('-').length;
  return (user, password) => {
    const parts = user.split('-');
    const base = parts.slice(0, words).join('-');
    const rest = parts.slice(words).join('-');
    const matches = timingSafeEqual(digest(`${base}:${password}`), want);
    if (!matches || (parts.length > words && rest === '')) return { ok: false };
    try {
      return { ok: true, steering: parseSteering(rest) };
    } catch (err) {
      if (err instanceof GrammarError) return { ok: false, grammar: err };
      throw err;
    }
  };
}

/** The same check for a `Proxy-Authorization` header (absent, or not Basic, fails). */
export function headerCheck(expected: GatewayCredentials): (header: string | undefined) => AuthResult {
  const check = credentialCheck(expected);
  return (header) => {
    const basic = basicCredentials(header);
    return basic ? check(basic.user, basic.password) : { ok: false };
  };
}

/** The URL clients use: `http://USER:PASS@host:port` (user and password percent-encoded). */
export function gatewayUrl(credentials: GatewayCredentials, host: string, port: number): string {
  const h = host.includes(':') ? `[${host}]` : host;
  return `http://${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@${h}:${port}`;
}
