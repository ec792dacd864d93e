/** Error bodies as Compute sends them (legacy `errors[]` with `reason`), and the faults tests can inject. */

/** The methods the fake serves, named as in the REST reference. */
export type Method =
  | 'instances.insert'
  | 'instances.get'
  | 'instances.delete'
  | 'instances.aggregatedList'
  | 'instances.getGuestAttributes'
  | 'zoneOperations.get'
  | 'zoneOperations.wait'
  | 'zoneOperations.delete'
  | 'globalOperations.aggregatedList'
  | 'zones.get'
  | 'machineTypes.get'
  | 'images.get'
  | 'images.getFromFamily'
  | 'networks.get'
  | 'firewalls.list'
  | 'regions.get';

/** A refusal the fake answers with: an HTTP status and one Compute error (domain, reason, message). */
export class ComputeError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly domain = 'global',
  ) {
    super(message);
  }

  /** The JSON body, as compute.googleapis.com writes it. */
  body(): unknown {
    return {
      error: {
        code: this.status,
        message: this.message,
        errors: [{ message: this.message, domain: this.domain, reason: this.reason }],
      },
    };
  }
}

export const notFound = (resource: string) =>
  new ComputeError(404, 'notFound', `The resource '${resource}' was not found`);
export const alreadyExists = (resource: string) =>
  new ComputeError(409, 'alreadyExists', `The resource '${resource}' already exists`);
export const invalidField = (field: string, value: string, why: string) =>
  new ComputeError(400, 'invalid', `Invalid value for field '${field}': '${value}'. ${why}`);
/**
 * An organisation-policy refusal of an insert, as Compute writes it (HTTP 412, reason
 * conditionNotMet; constraints listed in
 * https://cloud.google.com/resource-manager/docs/organization-policy/org-policy-constraints).
 */
export const policyViolated = (constraint: string, project: string, instance: string) =>
  new ComputeError(
    412,
    'conditionNotMet',
    constraint === 'compute.vmExternalIpAccess'
      ? `Constraint constraints/${constraint} violated for project ${project}. Add instance ${instance} to the constraint to use external IP with it.`
      : `Constraint constraints/${constraint} violated for project ${project}.`,
  );
export const notReady = (resource: string) =>
  new ComputeError(400, 'resourceNotReady', `The resource '${resource}' is not ready`);

/** A fault to inject into the next matching calls (`times`, default 1; `Infinity` for all). */
export type Fault = { method: Method; times?: number; instance?: string } & (
  | { kind: 'quota' | 'rateLimit' | 'apiDisabled' | 'serverError' | 'forbidden' | 'drop' }
  | { kind: 'invalidField'; field: string }
  | { kind: 'slow'; delayMs: number }
  /** instances.insert only: the insert is accepted and its operation fails `afterMs` later. */
  | { kind: 'operationError'; code: string; location?: string; afterMs?: number }
);

/** The error a synchronous fault answers with (undefined for slow, drop and operationError). */
export function faultError(fault: Fault, resource: string, permission: string): ComputeError | undefined {
  switch (fault.kind) {
    case 'quota':
      return new ComputeError(403, 'quotaExceeded', "Quota 'CPUS' exceeded.  Limit: 8.0 in region.", 'usageLimits');
    case 'rateLimit':
      // A rate quota (requests per minute), https://cloud.google.com/compute/api-quota
      return new ComputeError(403, 'rateLimitExceeded', 'Rate Limit Exceeded', 'usageLimits');
    case 'apiDisabled':
      // The Compute API not enabled in the project: 403 accessNotConfigured, as
      // https://cloud.google.com/apis/design/errors (SERVICE_DISABLED) and the API's own answer say.
      return new ComputeError(
        403,
        'accessNotConfigured',
        'Compute Engine API has not been used in project 123456789 before or it is disabled. Enable it by visiting https://console.developers.google.com/apis/api/compute.googleapis.com/overview?project=123456789 then retry.',
        'usageLimits',
      );
    case 'serverError':
      return new ComputeError(503, 'backendError', 'Internal error. Please try again or contact Google Support.');
    case 'forbidden':
      return new ComputeError(403, 'forbidden', `Required '${permission}' permission for '${resource}'`);
    case 'invalidField':
      return invalidField(fault.field, 'x', 'Injected by the test.');
    default:
      return undefined;
  }
}

/** Messages and HTTP statuses of the operation error codes the fake can report. */
export const OPERATION_ERRORS: Record<string, { status: number; message: string }> = {
  ZONE_RESOURCE_POOL_EXHAUSTED: {
    status: 503,
    message:
      'The zone does not have enough resources available to fulfill the request. Try a different zone, or try again later.',
  },
  QUOTA_EXCEEDED: { status: 403, message: "Quota 'CPUS' exceeded.  Limit: 8.0 in region." },
  INVALID_FIELD_VALUE: { status: 400, message: 'Invalid value for a field of the request.' },
  RESOURCE_NOT_FOUND: { status: 404, message: 'A resource the request refers to was not found.' },
  INTERNAL_ERROR: { status: 500, message: 'Internal error.' },
};
