/** Typed errors: retry behaviour is decided by the class and its `code`, never by message text. */

/** The fields every error of this project carries on the wire (relay reports, rejections, API). */
export interface ErrorInfo {
  code: ErrorCode;
  message: string;
  field?: string | undefined;
  retryAfterMs?: number | undefined;
}

export type ErrorCode = 'NotFound' | 'Permanent' | 'QuotaExceeded' | 'Retryable' | 'Validation';

/** Base class: a literal `code`, an optional `cause`. */
export abstract class EgressError extends Error {
  abstract readonly code: ErrorCode;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
  /** The serialisable form, safe to store and publish (no cause, no stack). */
  toInfo(): ErrorInfo {
    return { code: this.code, message: this.message };
  }
}

/** The object does not exist (an instance, a document). For `delete` it counts as done. */
export class NotFoundError extends EgressError {
  readonly code = 'NotFound' as const;
}

/** Input the backend will never accept as it is; retrying without a spec change is pointless. */
export class PermanentError extends EgressError {
  readonly code = 'Permanent' as const;
  constructor(
    message: string,
    readonly field?: string,
    options?: { cause?: unknown },
  ) {
    super(field ? `${field}: ${message}` : message, options);
  }
  override toInfo(): ErrorInfo {
    return { code: this.code, message: this.message, field: this.field };
  }
}

/** The backend is out of capacity or quota; retry with capped exponential backoff. */
export class QuotaExceededError extends EgressError {
  readonly code = 'QuotaExceeded' as const;
}

/** A transient failure; try again after `retryAfterMs` (a hint, not a promise). */
export class RetryableError extends EgressError {
  readonly code = 'Retryable' as const;
  constructor(
    message: string,
    readonly retryAfterMs = 1000,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
  override toInfo(): ErrorInfo {
    return { code: this.code, message: this.message, retryAfterMs: this.retryAfterMs };
  }
}

/** Bad input: names the offending field path (`spec.placement.zone`) and the reason. */
export class ValidationError extends EgressError {
  readonly code = 'Validation' as const;
  constructor(
    readonly field: string,
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(field ? `${field}: ${reason}` : reason, options);
  }
  override toInfo(): ErrorInfo {
    return { code: this.code, message: this.message, field: this.field };
  }
}

/** Rebuilds a typed error from its wire form (relay reports carry errors as data). */
export function errorFromInfo(info: ErrorInfo): EgressError {
  const message =
    info.field && info.message.startsWith(`${info.field}: `) ? info.message.slice(info.field.length + 2) : info.message;
  switch (info.code) {
    case 'NotFound':
      return new NotFoundError(message);
    case 'Permanent':
      return new PermanentError(message, info.field);
    case 'QuotaExceeded':
      return new QuotaExceededError(message);
    case 'Retryable':
      return new RetryableError(message, info.retryAfterMs);
    case 'Validation':
      return new ValidationError(info.field ?? '', message);
  }
}

/** Any thrown value as a typed error; unknown failures are treated as transient. */
export function asEgressError(err: unknown): EgressError {
  if (err instanceof EgressError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new RetryableError(message, 1000, { cause: err });
}
