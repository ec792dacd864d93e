/** Constant-time checking of a `Proxy-Authorization: Basic …` header. */
import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * @param header - the `Proxy-Authorization` header as received (may be absent)
 * @param expected - `username:password` as bytes
 * @returns true only for a well-formed Basic header carrying exactly `expected`
 */
export function basicAuthMatches(header: string | undefined, expected: Buffer): boolean {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  const given = match?.[1] ? Buffer.from(match[1], 'base64') : Buffer.alloc(0);
  // Equal-length digests, so timingSafeEqual never throws and the length leaks nothing.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b) && match !== null;
}
