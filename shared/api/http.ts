/** The API's transport-neutral request/response shapes, JSON errors and bearer-token check. */
import { createHash, timingSafeEqual } from 'node:crypto';

export interface ApiRequest {
  method: string;
  /** The path without query string, e.g. `/v1/proxies/eu-1`. */
  path: string;
  query: URLSearchParams;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed JSON body (undefined when there is none). */
  body: unknown;
}

export interface ApiResponse {
  status: number;
  headers?: Record<string, string>;
  /** An object is sent as JSON; a string as-is with its content type. */
  body: unknown;
}

export type ApiErrorCode =
  | 'Unauthorized'
  | 'NotFound'
  | 'Validation'
  | 'Conflict'
  | 'Unavailable'
  | 'Internal'
  | 'MethodNotAllowed'
  | 'TooManyRequests';

const STATUS: Record<ApiErrorCode, number> = {
  Unauthorized: 401,
  NotFound: 404,
  Validation: 400,
  Conflict: 409,
  MethodNotAllowed: 405,
  TooManyRequests: 429,
  Unavailable: 503,
  Internal: 500,
};

/** An error the API answers with `{error: {code, message, field?}}`. */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly field?: string,
    /** For `TooManyRequests`: the `Retry-After` header, in seconds. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

export function errorResponse(code: ApiErrorCode, message: string, field?: string): ApiResponse {
  return { status: STATUS[code], body: { error: { code, message, ...(field ? { field } : {}) } } };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * Who is calling, for per-caller limits: a digest of the bearer token (never the token itself).
 * Call only after {@link authorised} said yes.
 */
export function callerId(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  const token = /^Bearer\s+(\S+)$/i.exec(value ?? '')?.[1] ?? '';
  return digest(`egress-caller\n${token}`).toString('hex').slice(0, 32);
}

/**
 * True when the `Authorization: Bearer` token is one of `tokens`. Digests of equal length are
 * compared with `timingSafeEqual`, and every token is compared, so timing reveals nothing.
 */
export function authorised(header: string | string[] | undefined, tokens: readonly string[]): boolean {
  const value = Array.isArray(header) ? header[0] : header;
  const match = /^Bearer\s+(\S+)$/i.exec(value ?? '');
  if (!match?.[1]) return false;
  const presented = digest(match[1]);
  let ok = false;
  for (const token of tokens) ok = timingSafeEqual(presented, digest(token)) || ok;
  return ok;
}
