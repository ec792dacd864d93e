/** Kubernetes `Status` bodies for failures, shaped as the API server sends them (kind, reason, details, code). */

/** A failure answer: the HTTP code and the Status object sent as its body. */
export interface Failure {
  code: number;
  body: {
    kind: 'Status';
    apiVersion: 'v1';
    metadata: Record<string, never>;
    status: 'Failure';
    message: string;
    reason: string;
    details?: {
      name?: string;
      kind?: string;
      causes?: { field: string; reason: string; message: string }[];
      retryAfterSeconds?: number;
    };
    code: number;
  };
}

/** Thrown inside the fake to answer with a Status. */
export class StatusError extends Error {
  constructor(readonly failure: Failure) {
    super(failure.body.message);
  }
}

function failure(code: number, reason: string, message: string, details?: Failure['body']['details']): StatusError {
  return new StatusError({
    code,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message,
      reason,
      code,
      ...(details ? { details } : {}),
    },
  });
}

/** 404 `pods "x" not found` (resource is the plural, as in the URL). */
export const notFound = (resource: string, name: string) =>
  failure(404, 'NotFound', `${resource} "${name}" not found`, { name, kind: resource });

/** 404 for a path the server does not serve. */
export const noRoute = () => failure(404, 'NotFound', 'the server could not find the requested resource');

/** 409 `pods "x" already exists`. */
export const alreadyExists = (resource: string, name: string) =>
  failure(409, 'AlreadyExists', `${resource} "${name}" already exists`, { name, kind: resource });

/** 422 with one cause per invalid field (kind is the singular Kind: `Pod`). */
export const invalid = (kind: string, name: string, causes: { field: string; message: string }[]) =>
  failure(422, 'Invalid', `${kind} "${name}" is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`, {
    name,
    kind,
    causes: causes.map((c) => ({ ...c, reason: 'FieldValueInvalid' })),
  });

/** 400 for a body that is not a JSON object, or a selector that does not parse. */
export const badRequest = (message: string) => failure(400, 'BadRequest', message);

/** 401: no or unknown bearer token. */
export const unauthorized = () => failure(401, 'Unauthorized', 'Unauthorized');

/** 403 from RBAC, with the wording of the API server's authorizer. */
export const forbidden = (user: string, verb: string, resource: string, namespace: string, name?: string) =>
  failure(
    403,
    'Forbidden',
    `${resource}${name ? ` "${name}"` : ''} is forbidden: User "${user}" cannot ${verb} resource "${resource}" in API group "" in the namespace "${namespace}"`,
    { ...(name ? { name } : {}), kind: resource },
  );

/** 403 from the ResourceQuota admission plugin: the same code and reason as RBAC, only the message differs. */
export const quotaExceeded = (resource: string, name: string, used: number, hard: number) =>
  failure(
    403,
    'Forbidden',
    `${resource} "${name}" is forbidden: exceeded quota: egress-quota, requested: count/${resource}=1, used: count/${resource}=${used}, limited: count/${resource}=${hard}`,
    { name, kind: resource },
  );

/** 500 InternalError. */
export const internalError = (message: string) => failure(500, 'InternalError', `Internal error occurred: ${message}`);

/** 503 ServiceUnavailable with a retry hint. */
export const unavailable = () =>
  failure(503, 'ServiceUnavailable', 'the server is currently unable to handle the request', { retryAfterSeconds: 1 });

/** 409 Conflict: the object changed since the resourceVersion the client sent. */
export const conflict = (resource: string, name: string) =>
  failure(
    409,
    'Conflict',
    `Operation cannot be fulfilled on ${resource} "${name}": the object has been modified; please apply your changes to the latest version and try again`,
    { name, kind: resource },
  );

/** 405 for a verb the endpoint does not serve. */
export const failureMethod = (method: string) =>
  failure(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource (${method})`);
