/** Compute API failures decoded into fields (HTTP status, reasons, operation codes) and mapped to typed errors. */
import { z } from 'zod';
import { PermanentError, QuotaExceededError, RetryableError, type EgressError } from '../../errors.js';

/** What a failed Compute call said, as fields: never decided on by message text. */
export interface ApiFailure {
  /** HTTP status, when the API answered. */
  status?: number | undefined;
  /** `error.errors[].reason` and `error.details[].reason` (ErrorInfo) of the error body. */
  reasons: string[];
  /** The API's own message (for people), or the network error. */
  message: string;
  /** No answer: a connection error code (`ECONNREFUSED`) or `timeout`. */
  network?: string | undefined;
  /**
   * The request field a 400 refuses, as Compute names it in the fixed opening of its message
   * ("Invalid value for field 'resource.networkInterfaces[0].subnetwork': …", "Required field '…'
   * not specified"): a missing network or subnetwork is such a 400, not a 404.
   */
  field?: string | undefined;
}

const FIELD_OPENING = /^(?:Invalid value for field|Required field) '([^']+)'/;

/** A failed Compute call, thrown by the SDK adapter with the call it was. */
export class ComputeCallError extends Error {
  constructor(
    readonly method: string,
    readonly failure: ApiFailure,
  ) {
    super(`${method}: ${failure.message}`);
    this.name = 'ComputeCallError';
  }
}

/** The Google API error document (AIP-193, with the legacy `errors[]` Compute still sends). */
const errorBodySchema = z.object({
  error: z.object({
    code: z.number().optional(),
    message: z.string().optional(),
    errors: z.array(z.object({ reason: z.string().optional(), message: z.string().optional() })).optional(),
    details: z.array(z.object({ reason: z.string().optional() }).loose()).optional(),
  }),
});

const sdkErrorSchema = z
  .object({
    status: z.number().optional(),
    code: z.union([z.string(), z.number()]).optional(),
    message: z.string().optional(),
    reason: z.string().optional(),
    cause: z.unknown().optional(),
  })
  .loose();

/** gax's gRPC status codes for a deadline and an unavailable backend (a call timed out or never left). */
const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;

/**
 * Decodes whatever the SDK threw. In REST mode gax 5 with gaxios 7 leaves the HTTP error body as
 * undecoded JSON text in `message`: it is parsed here as the API's error document (its `reason`
 * fields), which is not the same as matching words in a message.
 */
export function decodeFailure(err: unknown): ApiFailure {
  if (err instanceof ComputeCallError) return err.failure;
  const e = sdkErrorSchema.safeParse(err);
  if (!e.success) return { reasons: [], message: String(err), network: 'unknown' };
  const { status, code, reason } = e.data;
  const text = e.data.message ?? '';
  if (status !== undefined) {
    const body = parseBody(text);
    const reasons = [
      ...(body?.error.errors ?? []).flatMap((x) => (x.reason ? [x.reason] : [])),
      ...(body?.error.details ?? []).flatMap((x) => (x.reason ? [x.reason] : [])),
    ];
    const message = body?.error.message ?? body?.error.errors?.[0]?.message ?? `HTTP ${status}`;
    const field = FIELD_OPENING.exec(message)?.[1];
    return { status, reasons, message, ...(field ? { field } : {}) };
  }
  if (code === GRPC_DEADLINE_EXCEEDED || code === 'TimeoutError' || code === 'ETIMEDOUT' || aborted(e.data.cause))
    return { reasons: reason ? [reason] : [], message: 'the call timed out', network: 'timeout' };
  if (code === GRPC_UNAVAILABLE) return { reasons: [], message: text || 'unavailable', network: 'unavailable' };
  const network = typeof code === 'string' ? code : causeCode(e.data.cause);
  return { reasons: reason ? [reason] : [], message: text || 'no answer', network: network ?? 'unknown' };
}

function parseBody(text: string): z.infer<typeof errorBodySchema> | undefined {
  try {
    const parsed = errorBodySchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** An aborted transfer (the HTTP transport's timeout) says so by the cause's `name`. */
function aborted(cause: unknown): boolean {
  const c = z.object({ name: z.string() }).loose().safeParse(cause);
  return c.success && (c.data.name === 'AbortError' || c.data.name === 'TimeoutError');
}

/** fetch() failures carry the socket error code one or two `cause`s down. */
function causeCode(cause: unknown, depth = 0): string | undefined {
  const c = z.object({ code: z.string().optional(), cause: z.unknown().optional() }).loose().safeParse(cause);
  if (!c.success || depth > 3) return undefined;
  return c.data.code ?? causeCode(c.data.cause, depth + 1);
}

const QUOTA_REASONS = new Set(['quotaExceeded', 'QUOTA_EXCEEDED', 'RESOURCE_EXHAUSTED']);
/**
 * A request-rate limit (calls per minute), not a resource quota: waiting a little is the cure.
 * https://cloud.google.com/compute/api-quota ("rate quotas": 403 rateLimitExceeded, refilled per minute).
 */
const RATE_REASONS = new Set(['rateLimitExceeded', 'userRateLimitExceeded', 'RATE_LIMIT_EXCEEDED']);
/** The Compute API is not enabled in the project (403 accessNotConfigured; ErrorInfo SERVICE_DISABLED). */
const DISABLED_REASONS = new Set(['accessNotConfigured', 'SERVICE_DISABLED']);

/**
 * Organisation-policy constraints an insert can violate (412 conditionNotMet, "Constraint
 * constraints/compute.vmExternalIpAccess violated for project N ..."), and the request field each
 * one refuses. https://cloud.google.com/resource-manager/docs/organization-policy/org-policy-constraints
 */
const CONSTRAINT_FIELDS: [RegExp, string, string][] = [
  [
    /constraints\/compute\.vmExternalIpAccess/,
    'networkInterfaces[0].accessConfigs',
    'the organisation policy forbids the external IP every proxy VM needs',
  ],
  [
    /constraints\/compute\.requireShieldedVm/,
    'spec.placement.image',
    'the organisation policy requires a Shielded VM image',
  ],
  [/constraints\/gcp\.resourceLocations/, 'spec.placement.zone', 'the organisation policy forbids this location'],
];

/** An organisation-policy refusal: the same request is refused until an administrator changes the policy. */
function policyError(f: ApiFailure, detail: string): PermanentError {
  const found = CONSTRAINT_FIELDS.find(([re]) => re.test(f.message));
  if (!found) return new PermanentError(`an organisation policy refuses the request: ${detail}`);
  return new PermanentError(`${found[2]}: ${detail}`, found[1]);
}
const INVALID_REASONS = new Set(['invalid', 'invalidParameter', 'badRequest', 'required', 'conflict']);

/** True when the failure says the resource does not exist. */
export const isNotFound = (f: ApiFailure) => f.status === 404 || f.reasons.includes('notFound');
/** True when the failure says a resource of that name already exists. */
export const isAlreadyExists = (f: ApiFailure) => f.status === 409 || f.reasons.includes('alreadyExists');
/** True when another operation holds the resource (a delete already under way). */
export const isNotReady = (f: ApiFailure) => f.reasons.includes('resourceNotReady');
/** True for input the API refuses (a 400 or a missing referenced resource): the field is worth diagnosing. */
export const isInvalid = (f: ApiFailure) =>
  isNotFound(f) ||
  (f.status === 400 && !isNotReady(f) && (f.reasons.length === 0 || f.reasons.some((r) => INVALID_REASONS.has(r))));

/**
 * The typed error for a failed call.
 *
 * @param what - what was being done, for the message (`insert of instance x in zone z`)
 * @param permission - the IAM permission the call needs, named when it is denied
 */
export function typedError(f: ApiFailure, what: string, permission: string): EgressError {
  const detail = `${what}: ${f.message}${f.reasons.length ? ` (${f.reasons.join(', ')})` : ''}`;
  if (f.reasons.some((r) => RATE_REASONS.has(r)) || (f.status === 429 && !f.reasons.some((r) => QUOTA_REASONS.has(r))))
    return new RetryableError(`${what}: request rate limit of the Compute API reached: ${f.message}`, 10_000);
  if (f.reasons.some((r) => QUOTA_REASONS.has(r))) return new QuotaExceededError(detail);
  if (f.status === 412 || f.reasons.includes('conditionNotMet')) return policyError(f, detail);
  if (f.reasons.some((r) => DISABLED_REASONS.has(r)))
    return new RetryableError(
      `${what}: the Compute Engine API is disabled in the project (accessNotConfigured); enable compute.googleapis.com: ${f.message}`,
      300_000,
    );
  if (f.network) return new RetryableError(`${what}: Compute API not reachable (${f.network})`, 2000);
  if (f.status === 401) return new RetryableError(`${what}: the credentials were rejected (401)`, 60_000);
  if (f.status === 403) return new RetryableError(`${what}: permission ${permission} denied (403)`, 60_000);
  if (isNotReady(f)) return new RetryableError(detail, 2000);
  if (f.status !== undefined && f.status >= 400 && f.status < 500 && isInvalid(f))
    return new PermanentError(detail, fieldOfLocation(f.field));
  return new RetryableError(detail, f.status !== undefined && f.status >= 500 ? 5000 : 2000);
}

/** An operation's `error` as Compute reports it (codes like `ZONE_RESOURCE_POOL_EXHAUSTED`). */
export interface OperationFailure {
  errors: { code: string; location?: string | undefined; message: string }[];
  httpErrorStatusCode?: number | undefined;
}

const OPERATION_QUOTA = new Set([
  'QUOTA_EXCEEDED',
  'ZONE_RESOURCE_POOL_EXHAUSTED',
  'ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS',
  'REGION_RESOURCE_POOL_EXHAUSTED',
  'RESOURCE_POOL_EXHAUSTED',
  'RATE_LIMIT_EXCEEDED',
  'RESOURCE_OPERATION_RATE_EXCEEDED',
]);
const OPERATION_PERMANENT = new Set([
  'RESOURCE_NOT_FOUND',
  'INVALID_FIELD_VALUE',
  'INVALID_USAGE',
  'UNSUPPORTED_OPERATION',
  'BAD_REQUEST',
]);

/** Request field paths (an error's `location`) that come from a placement key. */
const LOCATION_FIELDS: [RegExp, string][] = [
  [/machineType/, 'spec.placement.machineType'],
  [/sourceImage|initializeParams/, 'spec.placement.image'],
  [/subnetwork/, 'spec.placement.subnetwork'],
  [/network/, 'spec.placement.network'],
  [/diskSizeGb/, 'spec.placement.diskSizeGb'],
  [/^zone$|\.zone$/, 'spec.placement.zone'],
];

/** The placement field an operation error's `location` points at, if any. */
export function fieldOfLocation(location: string | undefined): string | undefined {
  if (!location) return undefined;
  return LOCATION_FIELDS.find(([re]) => re.test(location))?.[1];
}

/** The typed error for an operation that finished with `error`. */
export function operationError(op: OperationFailure, what: string): EgressError {
  const first = op.errors[0];
  const codes = op.errors.map((e) => e.code);
  const detail = `${what} failed: ${first?.message ?? 'no detail'} (${codes.join(', ') || `HTTP ${op.httpErrorStatusCode ?? '?'}`})`;
  if (codes.some((c) => OPERATION_QUOTA.has(c))) return new QuotaExceededError(detail);
  // An organisation policy checked after the insert was accepted (seen from instance groups).
  if (codes.includes('CONDITION_NOT_MET'))
    return policyError({ status: 412, reasons: codes, message: op.errors.map((e) => e.message).join('; ') }, detail);
  if (codes.some((c) => OPERATION_PERMANENT.has(c))) {
    const field = op.errors.map((e) => fieldOfLocation(e.location)).find(Boolean);
    return new PermanentError(detail, field);
  }
  if (codes.length === 0 && op.httpErrorStatusCode !== undefined)
    return typedError(
      { status: op.httpErrorStatusCode, reasons: [], message: detail },
      what,
      'the required permission',
    );
  return new RetryableError(detail, 5000);
}

/** Keeps a secret out of API text (which may echo the request) before it reaches status, logs and events. */
export function hide(text: string, secret: string): string {
  return secret ? text.split(secret).join('[redacted]') : text;
}
