/** Kubernetes placement: namespace, node selector, tolerations, host network/port, validated naming the field. */
import { z } from 'zod';
import { labelKey, labelsSchema, labelValue } from '../../domain/proxy.js';
import { ValidationError } from '../../errors.js';

/**
 * What a request's `spec.placement` may ask for beyond a managed namespace (an allow-list; the
 * default allows nothing). A Pod on the node's network (`hostNetwork`) is outside the namespace's
 * NetworkPolicy, the egress fence, and sees the node's own services; a toleration or node selector
 * puts Pods on nodes the cluster keeps apart (control-plane, GPU, other tenants' pools).
 */
export const placementBoundsSchema = z.strictObject({
  /** Whether a placement may say `hostNetwork: true`. */
  allowHostNetwork: z.boolean().default(false),
  /** The toleration strings a placement may list, verbatim (`*`, every taint, only if listed). */
  tolerations: z
    .array(
      z
        .string()
        .refine((t) => parseToleration(t) !== undefined, 'must be key, key=value, key:Effect, key=value:Effect or *'),
    )
    .max(50)
    .default([]),
  /** Per node label key, the values a placement's `nodeSelector` may ask for. */
  nodeSelectors: z.record(labelKey, z.array(labelValue).max(50)).default({}),
});
export type KubernetesPlacementBounds = z.infer<typeof placementBoundsSchema>;

/** A placement after validation, with the default namespace filled in (it feeds the spec hash). */
export type KubernetesPlacement = {
  namespace: string;
  nodeSelector?: Record<string, string>;
  /** `key`, `key=value`, `key:Effect`, `key=value:Effect`, or `*` (tolerate every taint). */
  tolerations?: string[];
  /** Run in the node's network namespace: the proxy's IP is the node's own (egress) IP. */
  hostNetwork?: boolean;
  /** Publish the proxy port on the node's IP (the instance IP is then the node's). */
  hostPort?: boolean;
};

/** A toleration as the Pod spec spells it. */
export interface Toleration {
  key?: string;
  operator: 'Equal' | 'Exists';
  value?: string;
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  tolerationSeconds?: number;
}

/** The NoExecute taints a node controller puts on a node it lost or that is not ready. */
const NODE_LOST_TAINTS = ['node.kubernetes.io/not-ready', 'node.kubernetes.io/unreachable'];

/**
 * The Pod's tolerations: the placement's, with `*` spelled per effect so that NoExecute is
 * tolerated for `seconds` only (a bare "tolerate everything" also tolerates a lost node's
 * `unreachable` taint for ever, and the DefaultTolerationSeconds plugin then adds nothing), and the
 * lost-node taints tolerated for `seconds`: taint-based eviction then removes the Pod of a lost node
 * (the smallest matching `tolerationSeconds` wins,
 * https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/#taint-based-evictions).
 */
export function podTolerations(placement: string[] | undefined, seconds: number): Toleration[] {
  const parsed = (placement ?? []).flatMap((text): Toleration[] => {
    if (text !== '*') return [parseToleration(text)].filter((t): t is Toleration => !!t);
    return [
      { operator: 'Exists', effect: 'NoSchedule' },
      { operator: 'Exists', effect: 'PreferNoSchedule' },
      { operator: 'Exists', effect: 'NoExecute', tolerationSeconds: seconds },
    ];
  });
  const lost = NODE_LOST_TAINTS.map((key): Toleration => ({
    key,
    operator: 'Exists',
    effect: 'NoExecute',
    tolerationSeconds: seconds,
  }));
  return [...parsed, ...lost];
}

const KNOWN_KEYS = ['namespace', 'nodeSelector', 'tolerations', 'hostNetwork', 'hostPort'] as const;
const TOLERATION =
  /^([A-Za-z0-9][-A-Za-z0-9_./]*)(=([A-Za-z0-9][-A-Za-z0-9_.]*)?)?(:(NoSchedule|PreferNoSchedule|NoExecute))?$/;

function fail(key: string, reason: string): never {
  throw new ValidationError(`spec.placement.${key}`, reason);
}

/**
 * Parses one toleration string.
 *
 * @example parseToleration('dedicated=egress:NoSchedule') // {key: 'dedicated', operator: 'Equal', value: 'egress', effect: 'NoSchedule'}
 * @returns undefined when the string is not a toleration
 */
export function parseToleration(text: string): Toleration | undefined {
  if (text === '*') return { operator: 'Exists' };
  const m = TOLERATION.exec(text);
  if (!m?.[1]) return undefined;
  const effect = m[5] === 'NoSchedule' || m[5] === 'PreferNoSchedule' || m[5] === 'NoExecute' ? m[5] : undefined;
  const toleration: Toleration = m[2]
    ? { key: m[1], operator: 'Equal', value: m[3] ?? '' }
    : { key: m[1], operator: 'Exists' };
  if (effect) toleration.effect = effect;
  return toleration;
}

/**
 * Validates and completes a placement, within the provider's bounds. Deterministic and free of side
 * effects (rule placement-deterministic).
 *
 * @param placement - after catalogue resolution
 * @param namespaces - the namespaces this provider manages; the first is the default
 * @param bounds - the provider's `options.placement`: what a placement may ask for
 * @throws ValidationError naming `spec.placement.<key>`
 */
export function resolveKubernetesPlacement(
  placement: Record<string, unknown>,
  namespaces: string[],
  bounds: KubernetesPlacementBounds,
): KubernetesPlacement {
  const resolved = parsePlacement(placement, namespaces);
  checkBounds(resolved, bounds);
  return resolved;
}

/** Refuses what the provider's `options.placement` does not list (the default lists nothing). */
function checkBounds(p: KubernetesPlacement, bounds: KubernetesPlacementBounds): void {
  if (p.hostNetwork && !bounds.allowHostNetwork)
    fail(
      'hostNetwork',
      "not allowed by this provider's options.placement.allowHostNetwork: a Pod on the node's network is outside the NetworkPolicy that fences the proxies' egress",
    );
  for (const t of p.tolerations ?? []) {
    if (!bounds.tolerations.includes(t))
      fail(
        'tolerations',
        `${JSON.stringify(t)} is not in this provider's options.placement.tolerations (allowed: ${listed(bounds.tolerations)})`,
      );
  }
  for (const [key, value] of Object.entries(p.nodeSelector ?? {})) {
    const values = bounds.nodeSelectors[key];
    if (!values?.includes(value))
      fail(
        'nodeSelector',
        `${key}=${value} is not in this provider's options.placement.nodeSelectors (allowed: ${listed(
          Object.entries(bounds.nodeSelectors).flatMap(([k, vs]) => vs.map((v) => `${k}=${v}`)),
        )})`,
      );
  }
}

function listed(items: string[]): string {
  return items.length > 0 ? items.join(', ') : 'none';
}

function parsePlacement(placement: Record<string, unknown>, namespaces: string[]): KubernetesPlacement {
  for (const key of Object.keys(placement)) {
    if (!(KNOWN_KEYS as readonly string[]).includes(key))
      fail(key, `unknown placement key for a kubernetes provider (known: ${KNOWN_KEYS.join(', ')})`);
  }
  const namespace = placement['namespace'] ?? namespaces[0] ?? 'default';
  if (typeof namespace !== 'string' || !namespaces.includes(namespace))
    fail(
      'namespace',
      `namespace ${JSON.stringify(namespace)} is not managed by this provider (managed: ${namespaces.join(', ')})`,
    );
  const resolved: KubernetesPlacement = { namespace };

  const selector = placement['nodeSelector'];
  if (selector !== undefined) {
    const parsed = labelsSchema.safeParse(selector);
    if (!parsed.success) fail('nodeSelector', `must map node label keys to values: ${issueOf(parsed.error)}`);
    else if (Object.keys(parsed.data).length > 0) resolved.nodeSelector = parsed.data;
  }

  const tolerations = placement['tolerations'];
  if (tolerations !== undefined) {
    const list = z.array(z.string()).safeParse(tolerations);
    if (!list.success) fail('tolerations', 'must be a list like ["dedicated=egress:NoSchedule"]');
    else {
      list.data.forEach((t, i) => {
        if (!parseToleration(t))
          fail(
            'tolerations',
            `entry ${i} ${JSON.stringify(t)} is not key, key=value, key:Effect, key=value:Effect or *`,
          );
      });
      if (list.data.length > 0) resolved.tolerations = list.data;
    }
  }

  for (const key of ['hostNetwork', 'hostPort'] as const) {
    const value = placement[key];
    if (value === undefined) continue;
    if (typeof value !== 'boolean') fail(key, 'must be true or false');
    else if (value) resolved[key] = true;
  }
  return resolved;
}

function issueOf(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${(issue?.path ?? []).join('.') || '(value)'}: ${issue?.message ?? 'invalid'}`;
}
