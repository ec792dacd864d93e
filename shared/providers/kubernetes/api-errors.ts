/**
 * Kubernetes API failures as typed errors, decided by the HTTP status and the Status object's
 * `reason`/`details` fields; only a 403 on create is told apart by its message, since RBAC and
 * every admission plugin answer it with reason Forbidden.
 */
import { z } from 'zod';
import { NotFoundError, PermanentError, QuotaExceededError, RetryableError, type EgressError } from '../../errors.js';

/** The Kubernetes `Status` object an API error carries (the fields this provider reads). */
export const kubeStatusSchema = z.object({
  reason: z.string().optional(),
  message: z.string().optional(),
  details: z
    .object({
      name: z.string().optional(),
      kind: z.string().optional(),
      retryAfterSeconds: z.number().optional(),
      causes: z
        .array(
          z.object({ field: z.string().optional(), reason: z.string().optional(), message: z.string().optional() }),
        )
        .optional(),
    })
    .optional(),
});
export type KubeStatus = z.infer<typeof kubeStatusSchema>;

/** An HTTP error answer from the API server, with its Status (empty when the body was not one). */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: KubeStatus,
  ) {
    super(`HTTP ${status}${body.reason ? ` ${body.reason}` : ''}: ${body.message ?? 'no message'}`);
    this.name = 'KubeApiError';
  }

  /** @returns true when the object does not exist (404); for a create, the namespace may be what is missing */
  get notFound(): boolean {
    return this.status === 404;
  }

  /** @returns true for 409 with reason AlreadyExists (not a write conflict) */
  get alreadyExists(): boolean {
    return this.status === 409 && this.body.reason === 'AlreadyExists';
  }
}

/**
 * Builds a KubeApiError from an SDK exception's status code and body (a JSON string, or nothing).
 */
export function kubeApiError(status: number, body: unknown): KubeApiError {
  let value = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      value = {};
    }
  }
  const parsed = kubeStatusSchema.safeParse(value);
  return new KubeApiError(status, parsed.success ? parsed.data : {});
}

/** What was being attempted, for the message and to name fields. */
export interface ApiCall {
  verb: 'create' | 'get' | 'list' | 'delete' | 'update';
  resource: 'pods' | 'secrets' | 'selfsubjectaccessreviews';
  namespace: string;
  name?: string;
  /** Maps a Kubernetes field path (`spec.nodeSelector`) to this project's field (`spec.placement.nodeSelector`). */
  fieldOf?: (kubeField: string) => string;
}

const describe = (c: ApiCall) => `${c.verb} ${c.resource}${c.name ? ` ${c.name}` : ''} in namespace ${c.namespace}`;

/**
 * The typed error for a failed call.
 * 404 → NotFound (a create that misses its namespace → Permanent naming `spec.placement.namespace`);
 * 403 on create → by the admission plugin that refused it (see `forbiddenOnCreate`);
 * 403 otherwise, 401 → Retryable (access can be granted without changing the proxy);
 * 422 Invalid, 400 → Permanent naming the field; 409, 429, 5xx, anything else → Retryable.
 */
export function toEgressError(err: unknown, call: ApiCall): EgressError {
  if (!(err instanceof KubeApiError)) {
    if (err instanceof RetryableError) return err;
    const message = err instanceof Error ? err.message : String(err);
    return new RetryableError(`cannot ${describe(call)}: ${message}`, 2000);
  }
  const { status, body } = err;
  const text = `cannot ${describe(call)}: ${body.message ?? `HTTP ${status}`}`;
  const retryAfterMs = (body.details?.retryAfterSeconds ?? 0) * 1000;
  if (status === 404) {
    if (call.verb === 'create' && body.details?.kind === 'namespaces')
      return new PermanentError(
        `namespace ${body.details.name ?? call.namespace} does not exist`,
        'spec.placement.namespace',
      );
    return new NotFoundError(text);
  }
  if (status === 403 && call.verb === 'create' && call.resource !== 'selfsubjectaccessreviews')
    return forbiddenOnCreate(body, text, call);
  if (status === 401 || status === 403) return new RetryableError(text, 30_000);
  if (status === 422 || status === 400) {
    const kubeField = body.details?.causes?.find((c) => c.field)?.field;
    const field = kubeField ? (call.fieldOf?.(kubeField) ?? `${call.resource}.${kubeField}`) : undefined;
    const cause = body.details?.causes?.[0]?.message;
    return new PermanentError(`${body.reason ?? 'Invalid'}: ${cause ?? body.message ?? `HTTP ${status}`}`, field);
  }
  return new RetryableError(text, retryAfterMs || (status === 429 ? 5000 : 2000));
}

/**
 * Maps a field of the Pod spec to the field a person edits: a placement key, a provider option,
 * or the proxy's port.
 *
 * @param optionsPath - `config.providers.N.options`
 */
export function podFieldOf(kubeField: string, optionsPath: string): string {
  const rules: [RegExp, string][] = [
    [/^spec\.nodeSelector/, 'spec.placement.nodeSelector'],
    [/^spec\.tolerations/, 'spec.placement.tolerations'],
    [/^spec\.hostNetwork/, 'spec.placement.hostNetwork'],
    [/\.hostPort$/, 'spec.placement.hostPort'],
    [/^metadata\.namespace/, 'spec.placement.namespace'],
    [/\.containerPort$/, 'spec.port'],
    [/^spec\.containers\[\d+\]\.image/, `${optionsPath}.image`],
    [/^spec\.containers\[\d+\]\.resources/, `${optionsPath}.resources`],
  ];
  return rules.find(([re]) => re.test(kubeField))?.[1] ?? `pod.${kubeField}`;
}

/**
 * A 403 on create comes from RBAC or from an admission plugin, all with reason `Forbidden`; only
 * the message (and NamespaceLifecycle's cause) says which:
 * - ResourceQuota "exceeded quota" → QuotaExceeded (room may free up);
 * - NamespaceLifecycle, cause `NamespaceTerminating` ("because it is being terminated") → Retryable;
 * - PodSecurity "violates PodSecurity" → Permanent on the placement key that asked for the host
 *   network or host port, else on the Pod's security context;
 * - LimitRanger "maximum|minimum … usage per Container/Pod" → Permanent on the resources option;
 * - anything else (RBAC: "cannot create resource") → Retryable: access can be granted.
 * https://kubernetes.io/docs/reference/access-authn-authz/admission-controllers/
 */
function forbiddenOnCreate(body: KubeStatus, text: string, call: ApiCall): EgressError {
  const message = body.message ?? '';
  const fieldOf = (kubeField: string) => call.fieldOf?.(kubeField) ?? `${call.resource}.${kubeField}`;
  if (/exceeded quota/.test(message)) return new QuotaExceededError(text);
  if (
    body.details?.causes?.some((c) => c.reason === 'NamespaceTerminating') ||
    /because it is being terminated/.test(message)
  )
    return new RetryableError(`${text} (the namespace is being deleted)`, 30_000);
  if (/violates PodSecurity/.test(message)) {
    const field = /hostNetwork=true/.test(message)
      ? fieldOf('spec.hostNetwork')
      : /hostPort/.test(message)
        ? fieldOf('spec.containers[0].ports[0].hostPort')
        : fieldOf('spec.securityContext');
    return new PermanentError(`the namespace's Pod Security level refuses the Pod: ${message}`, field);
  }
  if (/(maximum|minimum) \S+ usage per (Container|Pod)|must be (less|greater) than or equal to/.test(message))
    return new PermanentError(
      `a LimitRange of the namespace refuses the Pod: ${message}`,
      fieldOf('spec.containers[0].resources'),
    );
  return new RetryableError(text, 30_000);
}
