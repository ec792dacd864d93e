/**
 * The narrow Kubernetes API this provider uses, over `@kubernetes/client-node` loaded on first use
 * (a function that never calls a kubernetes provider never loads the SDK). Every call gets a child
 * span and a timeout; HTTP errors come out as `KubeApiError`.
 */
import { SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import type { AuthorizationV1Api, CoreV1Api, KubeConfig, V1Pod, V1Secret } from '@kubernetes/client-node';
import { z } from 'zod';
import { RetryableError } from '../../errors.js';
import { KubeApiError, kubeApiError } from './api-errors.js';
import { podSchema, type PodView } from './observe.js';
import type { KubernetesOptions } from './options.js';

/** Looked up per call, so a tracer provider registered (or replaced) after import is used. */
const tracer = () => trace.getTracer('egress/kubernetes');

type Sdk = typeof import('@kubernetes/client-node');
let sdk: Promise<Sdk> | undefined;
/** The SDK module, imported once per process on first use. */
export const loadSdk = (): Promise<Sdk> => (sdk ??= import('@kubernetes/client-node'));

/** The calls the provider makes. */
export interface KubeApi {
  /** The API server, for messages (never credentials). */
  readonly server: string;
  createSecret(namespace: string, body: V1Secret): Promise<void>;
  replaceSecret(namespace: string, name: string, body: V1Secret): Promise<void>;
  deleteSecret(namespace: string, name: string): Promise<void>;
  createPod(namespace: string, body: V1Pod): Promise<PodView>;
  readPod(namespace: string, name: string): Promise<PodView>;
  /** With `graceSeconds` 0, the forced delete (the object goes whatever its node says). */
  deletePod(namespace: string, name: string, graceSeconds?: number): Promise<void>;
  listPods(namespace: string, labelSelector: string): Promise<PodView[]>;
  /** A SelfSubjectAccessReview: may this identity `verb` `resource` (core group) in `namespace`? */
  canI(namespace: string, verb: string, resource: string): Promise<boolean>;
}

/** Where the options say the API server is (before any file is read). */
export function serverOf(options: KubernetesOptions): string {
  if (options.server) return options.server;
  if (options.gke) return options.gke.server;
  if (options.inCluster) return 'the in-cluster API server';
  return `the API server of ${options.kubeconfig ?? 'the kubeconfig'}${options.context ? ` (context ${options.context})` : ''}`;
}

/** Fetches an access token for GKE from the metadata server (the function's own identity). */
export type TokenSource = () => Promise<{ token: string; expiresAt: number }>;

const tokenResponse = z.object({ access_token: z.string().min(1), expires_in: z.number().positive() });

/**
 * The scopes the GKE token is asked with. GKE authenticates a Google access token as its account's
 * email, which it reads only with `userinfo.email`
 * (https://cloud.google.com/kubernetes-engine/docs/how-to/api-server-authentication); RBAC then
 * matches that email as a `User`. Cloud Run's metadata server gives `cloud-platform` alone unless
 * `?scopes=` asks for more (https://cloud.google.com/run/docs/securing/service-identity).
 */
export const GKE_TOKEN_SCOPES: readonly string[] = [
  'https://www.googleapis.com/auth/cloud-platform',
  'https://www.googleapis.com/auth/userinfo.email',
];

/** The metadata server's token endpoint as a TokenSource, asking for {@link GKE_TOKEN_SCOPES}. */
export function metadataTokenSource(url: string, timeoutMs: number): TokenSource {
  const withScopes = new URL(url);
  withScopes.searchParams.set('scopes', GKE_TOKEN_SCOPES.join(','));
  return async () => {
    const res = await fetch(withScopes, {
      headers: { 'Metadata-Flavor': 'Google' },
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!res.ok) throw new RetryableError(`metadata server answered ${res.status} for an access token`, 5000);
    const parsed = tokenResponse.safeParse(await res.json());
    if (!parsed.success) throw new RetryableError('metadata server returned no access token', 5000);
    return { token: parsed.data.access_token, expiresAt: Date.now() + parsed.data.expires_in * 1000 };
  };
}

interface Clients {
  core: CoreV1Api;
  authz: AuthorizationV1Api;
  ApiException: Sdk['ApiException'];
  /** Rebuild after this time (a GKE access token expires). */
  renewAt: number;
}

async function buildClients(options: KubernetesOptions, optionsPath: string, tokens?: TokenSource): Promise<Clients> {
  const k8s = await loadSdk();
  const kc: KubeConfig = new k8s.KubeConfig();
  let renewAt = Number.POSITIVE_INFINITY;
  const skipTLSVerify = (server: string) => options.skipTlsVerify || server.startsWith('http:');
  try {
    if (options.kubeconfig) {
      kc.loadFromFile(options.kubeconfig);
      if (options.context) {
        if (!kc.getContextObject(options.context))
          throw new RetryableError(
            `${optionsPath}.context: no context "${options.context}" in ${options.kubeconfig}`,
            30_000,
          );
        kc.setCurrentContext(options.context);
      }
    } else if (options.inCluster) {
      kc.loadFromCluster();
    } else if (options.gke) {
      const { token, expiresAt } = await (tokens ?? metadataTokenSource(options.gke.metadataUrl, 5000))();
      renewAt = expiresAt - 300_000;
      const server = options.gke.server;
      const cluster = { name: 'gke', server, skipTLSVerify: skipTLSVerify(server), caData: options.gke.caData };
      kc.loadFromClusterAndUser(cluster, { name: 'gke', token });
    } else if (options.server && options.token) {
      const cluster = { name: 'egress', server: options.server, skipTLSVerify: skipTLSVerify(options.server) };
      kc.loadFromClusterAndUser(cluster, { name: 'egress', token: options.token });
    }
  } catch (err) {
    if (err instanceof RetryableError) throw err;
    // A config or file problem: fixed by a config change, so retried rather than latched as permanent.
    const message = err instanceof Error ? err.message : String(err);
    throw new RetryableError(`${optionsPath}: cannot load cluster access: ${message}`, 30_000);
  }
  return {
    core: kc.makeApiClient(k8s.CoreV1Api),
    authz: kc.makeApiClient(k8s.AuthorizationV1Api),
    ApiException: k8s.ApiException,
    renewAt,
  };
}

/** The API clients, built once and rebuilt when their access expires (one build at a time). */
function renewingClients(
  options: KubernetesOptions,
  optionsPath: string,
  tokens?: TokenSource,
): () => Promise<Clients> {
  let current: Clients | undefined;
  let building: Promise<Clients> | undefined;
  return async () => {
    if (current && Date.now() < current.renewAt) return current;
    building ??= buildClients(options, optionsPath, tokens)
      .then((c) => (current = c))
      .finally(() => (building = undefined));
    return building;
  };
}

/**
 * @param options - validated provider options
 * @param optionsPath - `config.providers.N.options`, for errors naming the field
 * @param tokens - where GKE access tokens come from (tests pass their own)
 */
export function createKubeApi(options: KubernetesOptions, optionsPath: string, tokens?: TokenSource): KubeApi {
  const server = serverOf(options);
  const timeoutMs = options.requestTimeoutSeconds * 1000;
  const clients = renewingClients(options, optionsPath, tokens);

  const call = <T>(op: string, attributes: Attributes, fn: (c: Clients) => Promise<T>): Promise<T> =>
    tracedKubeCall({ server, timeoutMs, op, attributes }, clients, fn);
  const pod = (value: unknown) => parsePod(server, value);

  return {
    server,
    createSecret: (namespace, body) =>
      call('secrets.create', attrs('create', 'secrets', namespace, body.metadata?.name), async (c) => {
        await c.core.createNamespacedSecret({ namespace, body });
      }),
    replaceSecret: (namespace, name, body) =>
      call('secrets.update', attrs('update', 'secrets', namespace, name), async (c) => {
        await c.core.replaceNamespacedSecret({ name, namespace, body });
      }),
    deleteSecret: (namespace, name) =>
      call('secrets.delete', attrs('delete', 'secrets', namespace, name), async (c) => {
        await c.core.deleteNamespacedSecret({ name, namespace });
      }),
    createPod: (namespace, body) =>
      call('pods.create', attrs('create', 'pods', namespace, body.metadata?.name), async (c) =>
        pod(await c.core.createNamespacedPod({ namespace, body })),
      ),
    readPod: (namespace, name) =>
      call('pods.get', attrs('get', 'pods', namespace, name), async (c) =>
        pod(await c.core.readNamespacedPod({ name, namespace })),
      ),
    deletePod: (namespace, name, graceSeconds) =>
      call('pods.delete', attrs('delete', 'pods', namespace, name), async (c) => {
        await c.core.deleteNamespacedPod({
          name,
          namespace,
          ...(graceSeconds === undefined ? {} : { gracePeriodSeconds: graceSeconds }),
        });
      }),
    listPods: (namespace, labelSelector) =>
      call('pods.list', attrs('list', 'pods', namespace), async (c) => {
        const list = await c.core.listNamespacedPod({ namespace, labelSelector });
        return list.items.map(pod);
      }),
    canI: (namespace, verb, resource) =>
      call('selfsubjectaccessreviews.create', attrs('create', 'selfsubjectaccessreviews', namespace), async (c) => {
        const review = await c.authz.createSelfSubjectAccessReview({
          body: {
            apiVersion: 'authorization.k8s.io/v1',
            kind: 'SelfSubjectAccessReview',
            spec: { resourceAttributes: { namespace, verb, resource, group: '' } },
          },
        });
        return review.status?.allowed === true;
      }),
  };
}

/**
 * One API call: a CLIENT span named after it, a timeout, and HTTP errors as KubeApiError;
 * anything else that failed is a RetryableError naming the server.
 */
async function tracedKubeCall<T>(
  call: { server: string; timeoutMs: number; op: string; attributes: Attributes },
  clients: () => Promise<Clients>,
  fn: (c: Clients) => Promise<T>,
): Promise<T> {
  const { server, timeoutMs, op, attributes } = call;
  const c = await clients();
  return tracer().startActiveSpan(
    `kubernetes ${op}`,
    { kind: SpanKind.CLIENT, attributes: { ...attributes, 'server.address': server } },
    async (span) => {
      let timer: NodeJS.Timeout | undefined;
      try {
        const timeout = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new RetryableError(`${op} timed out after ${timeoutMs} ms (${server})`, 2000)),
            timeoutMs,
          );
        });
        const result = await Promise.race([fn(c), timeout]);
        span.setAttribute('http.response.status_code', 200);
        return result;
      } catch (err) {
        const e = err instanceof c.ApiException ? kubeApiError(err.code, err.body) : err;
        if (e instanceof KubeApiError) {
          span.setAttributes({ 'http.response.status_code': e.status, 'k8s.status.reason': e.body.reason ?? '' });
          if (e.status !== 404)
            span.setStatus({ code: SpanStatusCode.ERROR, message: e.body.reason ?? `HTTP ${e.status}` });
        } else {
          span.setStatus({ code: SpanStatusCode.ERROR, message: e instanceof Error ? e.name : 'error' });
        }
        throw e instanceof KubeApiError || e instanceof RetryableError
          ? e
          : new RetryableError(`cannot reach ${server}: ${e instanceof Error ? e.message : String(e)}`, 2000);
      } finally {
        clearTimeout(timer);
        span.end();
      }
    },
  );
}

/** The span attributes of a call on `resource`. */
function attrs(verb: string, resource: string, namespace: string, name?: string): Attributes {
  return {
    'k8s.verb': verb,
    'k8s.resource': resource,
    'k8s.namespace.name': namespace,
    ...(name ? { 'k8s.object.name': name } : {}),
  };
}

/** A Pod as the provider reads it; one it cannot read is a RetryableError naming the server. */
function parsePod(server: string, value: unknown): PodView {
  const parsed = podSchema.safeParse(value);
  if (!parsed.success)
    throw new RetryableError(`${server} returned a Pod this provider cannot read: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}
