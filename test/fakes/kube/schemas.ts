/** Request bodies the fake accepts (zod), and the API server's validation that answers 422 with causes. */
import { z } from 'zod';
import { badRequest, invalid } from './status.js';

const metadata = z
  .object({
    name: z.string(),
    namespace: z.string().optional(),
    labels: z.record(z.string(), z.string()).optional(),
  })
  .passthrough();

const container = z
  .object({
    name: z.string(),
    image: z.string(),
    command: z.array(z.string()).optional(),
    ports: z
      .array(
        z
          .object({
            name: z.string().optional(),
            containerPort: z.number().int(),
            hostPort: z.number().int().optional(),
          })
          .passthrough(),
      )
      .optional(),
    readinessProbe: z
      .object({
        tcpSocket: z.object({ port: z.union([z.number().int(), z.string()]) }).optional(),
        periodSeconds: z.number().int().optional(),
      })
      .passthrough()
      .optional(),
    volumeMounts: z.array(z.object({ name: z.string(), mountPath: z.string() }).passthrough()).optional(),
  })
  .passthrough();

const toleration = z.object({
  key: z.string().optional(),
  operator: z.string().optional(),
  value: z.string().optional(),
  effect: z.string().optional(),
  tolerationSeconds: z.number().int().optional(),
});

export const podSpecSchema = z
  .object({
    containers: z.array(container).min(1),
    initContainers: z.array(container).optional(),
    restartPolicy: z.enum(['Always', 'OnFailure', 'Never']).default('Always'),
    nodeSelector: z.record(z.string(), z.string()).optional(),
    tolerations: z.array(toleration).optional(),
    hostNetwork: z.boolean().optional(),
    terminationGracePeriodSeconds: z.number().int().min(0).default(30),
    volumes: z
      .array(
        z
          .object({ name: z.string(), secret: z.object({ secretName: z.string() }).passthrough().optional() })
          .passthrough(),
      )
      .optional(),
  })
  .passthrough();

export const podBodySchema = z.object({ metadata, spec: podSpecSchema }).passthrough();
export type PodBody = z.infer<typeof podBodySchema>;
export type PodSpec = z.infer<typeof podSpecSchema>;
export type Toleration = z.infer<typeof toleration>;

export const secretBodySchema = z
  .object({
    metadata,
    type: z.string().default('Opaque'),
    data: z.record(z.string(), z.string()).optional(),
    stringData: z.record(z.string(), z.string()).optional(),
  })
  .passthrough();
export type SecretBody = z.infer<typeof secretBodySchema>;

export const accessReviewSchema = z
  .object({
    spec: z.object({
      resourceAttributes: z
        .object({
          namespace: z.string().optional(),
          verb: z.string(),
          resource: z.string(),
          name: z.string().optional(),
        })
        .passthrough(),
    }),
  })
  .passthrough();

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
const EFFECTS = ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'];

type Cause = { field: string; message: string };

/** `spec.containers.0.image` → `spec.containers[0].image`, the API server's spelling. */
function fieldPath(path: PropertyKey[]): string {
  return path.reduce<string>(
    (acc, p) => (typeof p === 'number' ? `${acc}[${p}]` : acc ? `${acc}.${String(p)}` : String(p)),
    '',
  );
}

/**
 * Decodes a body: not an object → 400; missing or mistyped fields → 422 naming them (`kind` is the
 * singular Kind for the message).
 */
export function decode<T>(schema: z.ZodType<T>, body: unknown, kind: string): T {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw badRequest('the body must be a JSON object');
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const name = z.object({ metadata: z.object({ name: z.string() }) }).safeParse(body);
  throw invalid(
    kind,
    name.success ? name.data.metadata.name : '',
    parsed.error.issues.map((i) => ({ field: fieldPath(i.path), message: i.message })),
  );
}

function checkMeta(meta: { name: string; labels?: Record<string, string> | undefined }, causes: Cause[]): void {
  if (meta.name.length > 253 || !DNS_SUBDOMAIN.test(meta.name))
    causes.push({
      field: 'metadata.name',
      message: "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.'",
    });
  for (const [k, v] of Object.entries(meta.labels ?? {})) {
    if (!LABEL_KEY.test(k))
      causes.push({ field: 'metadata.labels', message: `invalid label key ${JSON.stringify(k)}` });
    if (v.length > 63 || !LABEL_VALUE.test(v))
      causes.push({
        field: 'metadata.labels',
        message: `invalid label value ${JSON.stringify(v)}: must be 63 characters or less`,
      });
  }
}

/** The Pod validation of the API server (the parts the provider can get wrong); throws 422. */
export function validatePod(pod: PodBody): void {
  const causes: Cause[] = [];
  checkMeta(pod.metadata, causes);
  const spec = pod.spec;
  const volumes = new Set((spec.volumes ?? []).map((v) => v.name));
  const all = [
    ...spec.containers.map((c, i) => ({ c, at: `spec.containers[${i}]` })),
    ...(spec.initContainers ?? []).map((c, i) => ({ c, at: `spec.initContainers[${i}]` })),
  ];
  all.forEach(({ c, at }) => {
    if (!DNS_LABEL.test(c.name)) causes.push({ field: `${at}.name`, message: 'must be a DNS-1123 label' });
    if (!c.image.trim() || /\s/.test(c.image)) causes.push({ field: `${at}.image`, message: 'Required value' });
    (c.ports ?? []).forEach((p, j) => {
      if (p.containerPort < 1 || p.containerPort > 65535)
        causes.push({ field: `${at}.ports[${j}].containerPort`, message: 'must be between 1 and 65535, inclusive' });
      if (p.hostPort !== undefined && (p.hostPort < 0 || p.hostPort > 65535))
        causes.push({ field: `${at}.ports[${j}].hostPort`, message: 'must be between 0 and 65535, inclusive' });
      if (spec.hostNetwork && p.hostPort !== undefined && p.hostPort !== p.containerPort)
        causes.push({
          field: `${at}.ports[${j}].hostPort`,
          message: 'must match `containerPort` when `hostNetwork` is true',
        });
    });
    (c.volumeMounts ?? []).forEach((m, j) => {
      if (!volumes.has(m.name))
        causes.push({ field: `${at}.volumeMounts[${j}].name`, message: `Not found: ${JSON.stringify(m.name)}` });
    });
  });
  for (const [k, v] of Object.entries(spec.nodeSelector ?? {})) {
    if (!LABEL_KEY.test(k) || v.length > 63 || !LABEL_VALUE.test(v))
      causes.push({ field: 'spec.nodeSelector', message: `invalid label ${JSON.stringify(`${k}=${v}`)}` });
  }
  (spec.tolerations ?? []).forEach((t, i) => {
    const operator = t.operator ?? 'Equal';
    if (operator !== 'Equal' && operator !== 'Exists')
      causes.push({
        field: `spec.tolerations[${i}].operator`,
        message: `Unsupported value: ${JSON.stringify(operator)}`,
      });
    if (operator === 'Exists' && t.value)
      causes.push({
        field: `spec.tolerations[${i}].operator`,
        message: "value must be empty when `operator` is 'Exists'",
      });
    if (!EFFECTS.includes(t.effect ?? ''))
      causes.push({
        field: `spec.tolerations[${i}].effect`,
        message: `Unsupported value: ${JSON.stringify(t.effect)}`,
      });
  });
  if (causes.length > 0) throw invalid('Pod', pod.metadata.name, causes);
}

/** The Secret validation: name, labels, data keys and base64 values; throws 422. */
export function validateSecret(secret: SecretBody): void {
  const causes: Cause[] = [];
  checkMeta(secret.metadata, causes);
  for (const [k, v] of Object.entries(secret.data ?? {})) {
    if (!/^[-._a-zA-Z0-9]+$/.test(k))
      causes.push({
        field: `data[${k}]`,
        message: "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
      });
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(v)) causes.push({ field: `data[${k}]`, message: 'illegal base64 data' });
  }
  if (causes.length > 0) throw invalid('Secret', secret.metadata.name, causes);
}
