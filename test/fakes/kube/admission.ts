/**
 * The admission plugins a real API server runs before a Pod or Secret is stored, in their order:
 * NamespaceLifecycle (a terminating namespace), LimitRanger (a per-container maximum) and
 * PodSecurity (the namespace's `pod-security.kubernetes.io/enforce` label). Each refuses with 403
 * Forbidden and the plugin's wording; only the message (and for NamespaceLifecycle a cause) tells
 * them apart from RBAC and ResourceQuota, which answer 403 Forbidden too.
 */
import type { PodBody } from './schemas.js';
import { StatusError } from './status.js';

/** What a namespace carries beyond its name. */
export interface NamespaceRules {
  /** `pod-security.kubernetes.io/enforce`: `privileged` (default), `baseline` or `restricted`. */
  enforce?: 'privileged' | 'baseline' | 'restricted';
  /** A LimitRange `max.memory` for type Container (`64Mi`). */
  maxMemoryPerContainer?: string;
  /** Deleted, still finalizing: nothing new may be created in it. */
  terminating?: boolean;
}

const forbidden = (
  resource: string,
  name: string,
  message: string,
  causes?: { field: string; reason: string; message: string }[],
) =>
  new StatusError({
    code: 403,
    body: {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: `${resource} "${name}" is forbidden: ${message}`,
      reason: 'Forbidden',
      details: { name, kind: resource, ...(causes ? { causes } : {}) },
      code: 403,
    },
  });

/**
 * NamespaceLifecycle: "unable to create new content in namespace X because it is being terminated",
 * with the cause `NamespaceTerminating` on `metadata.namespace`
 * (k8s.io/api core/v1 NamespaceTerminatingCause; plugin/pkg/admission/namespace/lifecycle).
 */
export function admitNamespace(
  rules: NamespaceRules | undefined,
  resource: string,
  name: string,
  namespace: string,
): void {
  if (!rules?.terminating) return;
  const message = `unable to create new content in namespace ${namespace} because it is being terminated`;
  throw forbidden(resource, name, message, [
    {
      field: 'metadata.namespace',
      reason: 'NamespaceTerminating',
      message: `namespace ${namespace} is being terminated`,
    },
  ]);
}

const UNITS: Record<string, number> = { '': 1, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 };

/** A memory quantity in bytes (`64Mi`, `128M`, `1Gi`); NaN when it does not parse. */
function bytes(quantity: string): number {
  const m = /^(\d+(?:\.\d+)?)(k|M|G|Ki|Mi|Gi)?$/.exec(quantity);
  return m ? Number(m[1]) * (UNITS[m[2] ?? ''] ?? NaN) : NaN;
}

/** LimitRanger: "maximum memory usage per Container is 64Mi, but limit is 128Mi" (plugin/pkg/admission/limitranger). */
export function admitLimits(rules: NamespaceRules | undefined, pod: PodBody): void {
  const max = rules?.maxMemoryPerContainer;
  if (!max) return;
  for (const c of pod.spec.containers) {
    const limits: unknown = Reflect.get(Reflect.get(c, 'resources') ?? {}, 'limits');
    const limit: unknown = limits && typeof limits === 'object' ? Reflect.get(limits, 'memory') : undefined;
    if (typeof limit === 'string' && bytes(limit) > bytes(max))
      throw forbidden('pods', pod.metadata.name, `maximum memory usage per Container is ${max}, but limit is ${limit}`);
  }
}

/**
 * PodSecurity, for the checks this fake knows (https://kubernetes.io/docs/concepts/security/pod-security-standards/):
 * baseline forbids host namespaces and hostPort; restricted also requires allowPrivilegeEscalation
 * false, capabilities drop ALL, runAsNonRoot and a RuntimeDefault or Localhost seccomp profile.
 * The message lists every violation, as the plugin writes it.
 */
export function admitPodSecurity(rules: NamespaceRules | undefined, pod: PodBody): void {
  const level = rules?.enforce ?? 'privileged';
  if (level === 'privileged') return;
  const spec = pod.spec;
  const podContext = (Reflect.get(spec, 'securityContext') ?? {}) as Record<string, unknown>;
  const found: string[] = [];
  if (spec.hostNetwork) found.push('host namespaces (hostNetwork=true)');
  for (const c of spec.containers)
    for (const p of c.ports ?? [])
      if (p.hostPort) found.push(`hostPort (container "${c.name}" uses hostPort ${p.hostPort})`);
  if (level === 'restricted') {
    for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
      const sc = (Reflect.get(c, 'securityContext') ?? {}) as Record<string, unknown>;
      if (sc['allowPrivilegeEscalation'] !== false)
        found.push(
          `allowPrivilegeEscalation != false (container "${c.name}" must set securityContext.allowPrivilegeEscalation=false)`,
        );
      const drop: unknown = Reflect.get(sc['capabilities'] ?? {}, 'drop');
      if (!Array.isArray(drop) || !drop.includes('ALL'))
        found.push(
          `unrestricted capabilities (container "${c.name}" must set securityContext.capabilities.drop=["ALL"])`,
        );
    }
    if (podContext['runAsNonRoot'] !== true)
      found.push('runAsNonRoot != true (pod must set securityContext.runAsNonRoot=true)');
    const seccomp: unknown = Reflect.get(podContext['seccompProfile'] ?? {}, 'type');
    if (seccomp !== 'RuntimeDefault' && seccomp !== 'Localhost')
      found.push(
        'seccompProfile (pod must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
      );
  }
  if (found.length > 0)
    throw forbidden('pods', pod.metadata.name, `violates PodSecurity "${level}:latest": ${found.join(', ')}`);
}
