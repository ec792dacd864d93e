/**
 * Cursor pagination of the API's proxy listings (`GET /v1/proxies`, `GET /v1/discovery`): each call
 * reads at most `limit` proxies from the store, in name order after the cursor, so no call reads
 * the whole fleet. The cursor is opaque to clients: the last name a page read, base64url-encoded.
 */
import { dnsLabel } from '../domain/names.js';
import { ValidationError } from '../errors.js';
import type { ApiResponse } from './http.js';

/** A listing's page size: the default, and the most a caller may ask for. */
export interface PageLimits {
  default: number;
  max: number;
}

/** `GET /v1/proxies`: whole documents with status and conditions. */
export const PROXY_PAGE: PageLimits = { default: 100, max: 500 };
/** `GET /v1/discovery`: a gateway reads every page each refresh, so its pages are larger. */
export const DISCOVERY_PAGE: PageLimits = { default: 500, max: 1000 };
/** `GET /v1/discovery?fresh=true`: enough to wake on; bounds what one uncached call reads. */
export const FRESH_PAGE: PageLimits = { default: 10, max: 10 };

/** Marks our cursors apart from other base64url text, so a stray value is refused, not read as a name. */
const PREFIX = 'egress-page:';

/** The cursor of the page after the one that read up to `name`. */
export function encodeCursor(name: string): string {
  return Buffer.from(PREFIX + name, 'utf8').toString('base64url');
}

/**
 * @returns the name the previous page read up to, or null for the first page
 * @throws ValidationError naming `cursor` when it is not one this API gave
 */
export function parseCursor(raw: string | null): string | null {
  if (raw === null) return null;
  const text = /^[A-Za-z0-9_-]{1,400}$/.test(raw) ? Buffer.from(raw, 'base64url').toString('utf8') : '';
  const name = text.startsWith(PREFIX) ? text.slice(PREFIX.length) : '';
  if (!dnsLabel.safeParse(name).success)
    throw new ValidationError(
      'cursor',
      'is not a cursor this API gave (pass nextCursor or the Link rel="next" as given)',
    );
  return name;
}

/**
 * @returns `limit`, or the default when absent
 * @throws ValidationError naming `limit` when it is not an integer from 1 to the maximum
 */
export function parseLimit(raw: string | null, limits: PageLimits): number {
  if (raw === null || raw === '') return limits.default;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > limits.max)
    throw new ValidationError('limit', `must be an integer from 1 to ${limits.max} (default ${limits.default})`);
  return n;
}

/**
 * The headers that lead to the next page (RFC 8288 `Link` with `rel="next"`, relative to the
 * request's URL, and `X-Next-Cursor`); none after the last page.
 *
 * @param path - the route's path (`/v1/discovery`)
 * @param query - the request's query; the next page's link repeats it with the new cursor
 * @param next - the last name this page read, or null when it was the last page
 */
export function nextPageHeaders(path: string, query: URLSearchParams, next: string | null): ApiResponse['headers'] {
  if (next === null) return {};
  const cursor = encodeCursor(next);
  const params = new URLSearchParams(query);
  params.set('cursor', cursor);
  return { link: `<${path}?${params.toString()}>; rel="next"`, 'x-next-cursor': cursor };
}
