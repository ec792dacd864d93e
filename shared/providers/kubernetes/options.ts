/** The `kubernetes` provider's options (`config.providers.N.options`): cluster access, namespaces, image, resources. */
import { z } from 'zod';
import { dnsLabel } from '../../domain/names.js';
import { ValidationError } from '../../errors.js';
import { placementBoundsSchema } from './placement.js';

/**
 * A small image with tinyproxy (which supports `BasicAuth`) on its PATH. A tag, not a digest: no
 * registry is reachable where this was written, so no digest of it could be verified; it runs only
 * with `allowUnpinnedImage` (development).
 */
export const DEFAULT_IMAGE = 'docker.io/vimagick/tinyproxy:latest';
/** `name[:tag]@sha256:<64 lowercase hex>`: one name, one `@`, the digest OCI image references use. */
const DIGEST_REFERENCE = /^[^@\s]+@sha256:[0-9a-f]{64}$/;

const quantity = z
  .string()
  .regex(/^[0-9]+(\.[0-9]+)?(m|Ki|Mi|Gi|k|M|G)?$/, 'must be a Kubernetes quantity like "50m" or "64Mi"');
const resourceList = z.strictObject({ cpu: quantity.optional(), memory: quantity.optional() });

const httpUrl = z.url().refine((u) => /^https?:\/\//.test(u), 'must be an http(s) URL');

/** How the functions reach the cluster: exactly one of these. */
const accessSchema = z.strictObject({
  /** A kubeconfig file, and optionally the context to use (default: its current context). */
  kubeconfig: z.string().min(1).optional(),
  context: z.string().min(1).optional(),
  /** The function runs inside the cluster: the mounted service account token. */
  inCluster: z.boolean().optional(),
  /** An explicit API server and bearer token (local clusters and tests; an http:// server skips TLS). */
  server: httpUrl.optional(),
  token: z.string().min(1).optional(),
  /** GKE with the function's own Google identity: an access token from the metadata server. */
  gke: z
    .strictObject({
      server: httpUrl,
      /** The cluster's CA certificate, base64 (`masterAuth.clusterCaCertificate`). */
      caData: z.string().min(1).optional(),
      metadataUrl: httpUrl.default(
        'http://metadata.google.internal/computeMetadata/v1/instance/service-accounts/default/token',
      ),
    })
    .optional(),
  /** Skip TLS verification of the API server (never in production). */
  skipTlsVerify: z.boolean().default(false),
});

export const kubernetesOptionsSchema = accessSchema
  .extend({
    /** The namespace a placement without `namespace` uses. */
    namespace: dnsLabel.default('default'),
    /** Further namespaces placements may name; `get`, `delete`, `list` and `check` cover all of them. */
    namespaces: z.array(dnsLabel).max(20).default([]),
    /**
     * The proxy image, pinned by digest (`name@sha256:<64 hex>`) to run one known build: a tag can be
     * moved to other code by whoever controls the registry, and with `imagePullPolicy:
     * IfNotPresent` it is pulled once per node and may differ between nodes.
     */
    image: z
      .string()
      .min(1)
      .max(512)
      .refine(
        (i) => !i.includes('@') || DIGEST_REFERENCE.test(i),
        'a digest must be "name@sha256:" and 64 lowercase hex digits',
      )
      .default(DEFAULT_IMAGE),
    /** Development only: accept an image referenced by tag (the default image is one). */
    allowUnpinnedImage: z.boolean().default(false),
    /** What placements may ask for beyond a managed namespace; nothing unless listed here. */
    placement: placementBoundsSchema.default({ allowHostNetwork: false, tolerations: [], nodeSelectors: {} }),
    /** The proxy port when a proxy asks for port 0 (each Pod has its own IP, so one port fits all). */
    port: z.number().int().min(1).max(65535).default(8888),
    resources: z
      .strictObject({ requests: resourceList.optional(), limits: resourceList.optional() })
      .default({ requests: { cpu: '10m', memory: '16Mi' }, limits: { cpu: '500m', memory: '64Mi' } }),
    terminationGracePeriodSeconds: z.number().int().min(0).max(3600).default(5),
    /**
     * How long a Pod may stay Unschedulable (after the condition's lastTransitionTime) before it is
     * Failed: the cluster autoscaler and GKE Autopilot add a node on that very signal.
     */
    unschedulableSeconds: z.number().int().min(0).max(3600).default(600),
    /**
     * A Pod still there this long after its deletionTimestamp (its node lost, the kubelet never
     * confirming) is deleted with grace 0, the forced delete.
     */
    forceDeleteAfterSeconds: z.number().int().min(0).max(3600).default(60),
    /**
     * A Pod Running but not Ready this long (since its Ready condition turned False: a lost node, a
     * hung proxy) is reported Stopped, so it is replaced; also the `tolerationSeconds` of its
     * lost-node NoExecute tolerations, after which the cluster evicts it.
     */
    notReadySeconds: z.number().int().min(1).max(3600).default(120),
    /** Each API call gives up after this long (a RetryableError). */
    requestTimeoutSeconds: z.number().positive().max(300).default(10),
  })
  .superRefine((o, ctx) => {
    const ways = [o.kubeconfig !== undefined, o.inCluster === true, o.server !== undefined, o.gke !== undefined];
    if (ways.filter(Boolean).length !== 1)
      ctx.addIssue({
        code: 'custom',
        path: ['kubeconfig'],
        message:
          'set exactly one way to reach the cluster: kubeconfig (with context), inCluster, server (with token), or gke',
      });
    if (o.context !== undefined && o.kubeconfig === undefined)
      ctx.addIssue({ code: 'custom', path: ['context'], message: 'a context needs a kubeconfig file' });
    if (o.server !== undefined && o.token === undefined)
      ctx.addIssue({ code: 'custom', path: ['token'], message: 'an explicit server needs a bearer token' });
    if (!o.allowUnpinnedImage && !DIGEST_REFERENCE.test(o.image))
      ctx.addIssue({
        code: 'custom',
        path: ['image'],
        message: `must be pinned by digest ("name@sha256:" and 64 lowercase hex digits), not "${o.image}": a tag can change under the fleet (allowUnpinnedImage: true accepts one, for development only)`,
      });
    if (o.token !== undefined && o.server === undefined)
      ctx.addIssue({ code: 'custom', path: ['token'], message: 'a token is only used with an explicit server' });
  });

/** Validated options of one `kubernetes` provider. */
export type KubernetesOptions = z.infer<typeof kubernetesOptionsSchema>;

/**
 * Validates a provider's options.
 *
 * @param options - `config.providers.N.options` as configured
 * @param path - the provider's config path (`config.providers.2`), for errors naming the field
 * @returns the options with defaults applied
 * @throws ValidationError naming `config.providers.N.options.<key>`
 */
export function parseKubernetesOptions(options: Record<string, unknown>, path: string): KubernetesOptions {
  const parsed = kubernetesOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  // An unknown key is reported on the object; name the key itself.
  const unknown = issue?.code === 'unrecognized_keys' ? issue.keys[0] : undefined;
  const field = [`${path}.options`, ...(issue?.path ?? []).map(String), ...(unknown ? [unknown] : [])].join('.');
  throw new ValidationError(
    field,
    unknown ? 'unknown option for a kubernetes provider' : (issue?.message ?? 'invalid'),
  );
}

/** Every namespace this provider manages: the default first, then the extra ones, without repeats. */
export function managedNamespaces(options: KubernetesOptions): string[] {
  return [...new Set([options.namespace, ...options.namespaces])];
}
