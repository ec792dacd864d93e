/** The API's transport-neutral request/response shapes, JSON errors and bearer-token check. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { ApiError } from './api-error.js';
import type { ApiScope, ApiToken } from './scopes.js';

export interface ApiRequest {
  method: string;
  /** The path without query string, e.g. `/v1/proxies/eu-1`. */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (undefined when there is none). */
  body: unknown;
  /** The body's size in bytes as received, when the transport knows it (a chunked body has no `content-length`). */
  bodyBytes?: number;
  /** Fires when the caller closes the request before its answer: the work stops at its next step. */
  signal?: AbortSignal;
}

export interface ApiResponse {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as-is with its content type. */
  body: unknown;
}

/** The answer for an ApiError: `{error: {code, message, field?}}` at its status, with `Retry-After` when it has one. */
export function errorAnswer(err: ApiError): ApiResponse {
  const { code, message, field, retryAfterSeconds } = err;
  return {
    status: err.status,
    ...(retryAfterSeconds !== undefined && { headers: { 'retry-after': String(retryAfterSeconds) } }),
    body: { error: { code, message, ...(field ? { field } : {}) } },
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Who is calling, for per-caller limits: a digest of the bearer token (never the token itself).
 * Call only after {@link tokenScope} found the token.
 */
export function callerId(header: string | string[] | undefined): string {
  return digest(`egress-caller\n${bearer(header) ?? ''}`)
    .toString('hex')
    .slice(0, 32);
}

function bearer(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return /^Bearer\s+(\S+)$/i.exec(value ?? '')?.[1];
}

/**
 * The scope of the `Authorization: Bearer` token, or undefined when it is none of `tokens`.
 * Digests of equal length are compared with `timingSafeEqual`, and every token is compared, so
 * timing reveals neither whether a token matched nor which one.
 */
export function tokenScope(header: string | string[] | undefined, tokens: readonly ApiToken[]): ApiScope | undefined {
  const presented = bearer(header);
  if (!presented) return undefined;
  const mine = digest(presented);
  let scope: ApiScope | undefined;
  for (const t of tokens) if (timingSafeEqual(mine, digest(t.token))) scope = t.scope;
  return scope;
}
