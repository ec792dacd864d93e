/** Typed errors: retry behaviour is decided by the class and its `code`, never by message text. */
import { z } from 'zod';

/** Every error code, in one place: the wire schema and the type are derived from it. */
export const ERROR_CODES = ['NotFound', 'Permanent', 'QuotaExceeded', 'Retryable', 'Validation'] as const;

/** The wire form of an {@link ErrorCode} (relay reports, stored status). */
export const errorCodeSchema = z.enum(ERROR_CODES);

export type ErrorCode = z.infer<typeof errorCodeSchema>;

/** The fields every error of this project carries on the wire (relay reports, rejections, API). */
export const errorInfoSchema = z.object({
  code: errorCodeSchema,
  message: z.string().max(2048),
  field: z.string().max(256).optional(),
  retryAfterMs: z.number().optional(),
});
export type ErrorInfo = z.infer<typeof errorInfoSchema>;

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

/** Any thrown value as a typed error; unknown failures are treated as transient. */
export function asEgressError(err: unknown): EgressError {
  if (err instanceof EgressError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new RetryableError(message, 1000, { cause: err });
}
