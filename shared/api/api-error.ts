/** An error of the HTTP API, the one class on both sides: the server throws it to answer `{error}`, the clients raise it from that answer. */

/** The API's error codes and their HTTP status (docs/api.md, "Errors"). */
export const API_ERROR_STATUS = {
  Unauthorized: 401,
  Forbidden: 403,
  PayloadTooLarge: 413,
  NotFound: 404,
  Validation: 400,
  Conflict: 409,
  MethodNotAllowed: 405,
  TooManyRequests: 429,
  Unavailable: 503,
  Internal: 500,
} as const;
export type ApiErrorCode = keyof typeof API_ERROR_STATUS;

/**
 * What a client says when the API's own error is not what it got: `Network` (no answer: status 0),
 * `BadResponse` (an answer that is not what the route answers), `CloudRunIam` (Cloud Run IAM in
 * front of the API refused, or no ID token could be had).
 */
export type ClientErrorCode = 'Network' | 'BadResponse' | 'CloudRunIam';

export function isApiErrorCode(code: string): code is ApiErrorCode {
  return Object.hasOwn(API_ERROR_STATUS, code);
}

export interface ApiErrorDetails {
  /** The offending field path, for `Validation` and `Conflict`. */
  field?: string | undefined;
  /** For `TooManyRequests` and a busy `Unavailable`: the `Retry-After` header, in seconds. */
  retryAfterSeconds?: number | undefined;
  /** The HTTP status; by default the code's (0 for a client's own code). */
  status?: number | undefined;
  cause?: unknown;
}

/**
 * `{"error": {"code", "message", "field"?}}` with its status. The message is the API's own, the
 * line a user reads (the CLI prints `error: <message>`).
 */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  readonly field: string | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    readonly code: ApiErrorCode | ClientErrorCode,
    message: string,
    details: ApiErrorDetails = {},
  ) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.status = details.status ?? (isApiErrorCode(code) ? API_ERROR_STATUS[code] : 0);
    this.field = details.field;
    this.retryAfterSeconds = details.retryAfterSeconds;
  }

  /** Worth retrying while waiting: the API could not be reached, or it or a dependency is briefly away. */
  get transient(): boolean {
    return this.code === 'Network' || this.status >= 500;
  }
}
