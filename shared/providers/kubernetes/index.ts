/**
 * The `kubernetes` provider: one Pod per proxy running tinyproxy, its config (port, credentials) in
 * a Secret the Pod mounts, labelled for ownership; the check function probes it through itself.
 */
import { DEFAULT_EGRESS_POLICY, type EgressPolicy } from '../../config/egress-policy.js';
import type { V1Secret } from '@kubernetes/client-node';
import type { Config } from '../../config/schema.js';
import { EgressError, NotFoundError, PermanentError, RetryableError, ValidationError } from '../../errors.js';
import type { Instance, InstanceSpec, Provider, ProviderHealth } from '../contract.js';
import type { ProviderFactoryDeps } from '../factory.js';
import { KubeApiError, podFieldOf, toEgressError, type ApiCall } from './api-errors.js';
import { createKubeApi, type KubeApi, type TokenSource } from './client.js';
import { ownerSelector, podManifest, secretManifest, secretName } from './manifests.js';
import { ownerOf, podToInstance, type PodView } from './observe.js';
import { managedNamespaces, parseKubernetesOptions, type KubernetesOptions } from './options.js';
import { resolveKubernetesPlacement, type KubernetesPlacement } from './placement.js';

/** What the factory takes from the registry's {@link ProviderFactoryDeps}, and its test seam. */
export type KubernetesProviderDeps = Pick<ProviderFactoryDeps, 'provider' | 'path' | 'logger' | 'now'> & {
  config: Pick<Config, 'installationId'>;
  /** GKE access tokens (default: the metadata server); tests pass their own. */
  tokens?: TokenSource;
};

/** The verbs this provider needs, per resource, in every namespace it manages (see infra/kubernetes/rbac.yaml). */
export const REQUIRED_ACCESS: readonly { verb: string; resource: string }[] = [
  { verb: 'create', resource: 'pods' },
  { verb: 'get', resource: 'pods' },
  { verb: 'list', resource: 'pods' },
  { verb: 'delete', resource: 'pods' },
  { verb: 'create', resource: 'secrets' },
  { verb: 'update', resource: 'secrets' },
  { verb: 'delete', resource: 'secrets' },
];

class KubernetesProvider implements Provider {
  readonly name: string;
  readonly type = 'kubernetes';
  /** The check function probes each Running Pod through itself with `credentials/{name}`. */
  readonly probesRemotely = false;
  private readonly options: KubernetesOptions;
  /** Where the Pods' proxies may connect: ConnectPort here, the namespace's NetworkPolicy in the cluster. */
  private readonly egress: EgressPolicy;
  private readonly namespaces: string[];
  private readonly optionsPath: string;
  private readonly api: KubeApi;
  private readonly installationId: string;
  /** When a terminating Pod is due to be forced, and how long a Pod has been unschedulable or not Ready. */
  private readonly now: () => number;

  constructor(private readonly deps: KubernetesProviderDeps) {
    this.name = deps.provider.name;
    this.optionsPath = `${deps.path}.options`;
    this.options = parseKubernetesOptions(deps.provider.options, deps.path);
    this.egress = deps.provider.egress ?? DEFAULT_EGRESS_POLICY;
    this.namespaces = managedNamespaces(this.options);
    this.installationId = deps.config.installationId;
    this.now = deps.now ?? Date.now;
    this.api = createKubeApi(this.options, this.optionsPath, deps.tokens);
  }

  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    return { ...resolveKubernetesPlacement(placement, this.namespaces, this.options.placement) };
  }

  /** The cluster's country as configured (`providers[].country`). */
  expectedCountry(): string | undefined {
    return this.deps.provider.country;
  }

  async create(spec: InstanceSpec): Promise<Instance> {
    let placement: KubernetesPlacement;
    try {
      placement = resolveKubernetesPlacement(spec.placement, this.namespaces, this.options.placement);
    } catch (err) {
      if (err instanceof ValidationError) throw new PermanentError(err.reason, err.field);
      throw err;
    }
    const ns = placement.namespace;
    const port = spec.port || this.options.port;
    const secret = secretManifest(spec, this.name, ns, port, this.egress);
    const pod = podManifest(spec, this.name, placement, this.options, port);
    const fieldOf = (f: string) => podFieldOf(f, this.optionsPath);
    const podCall: ApiCall = { verb: 'create', resource: 'pods', namespace: ns, name: spec.name, fieldOf };
    // The Pod first, then its Secret owned by it: a Pod removed out of band takes its credentials
    // with it (garbage collection of dependents), and a refused create leaves no Secret behind.
    let created: PodView;
    try {
      created = await this.api.createPod(ns, pod);
    } catch (err) {
      if (isAlreadyExists(err)) return this.adopt(ns, spec, secret);
      const e = toEgressError(err, podCall);
      // Admission (quota, Pod Security) runs before storage: a duplicate create in a full
      // namespace gets 403, not 409. Look for the Pod before calling the create failed.
      if (err instanceof KubeApiError && err.status === 403 && (await this.exists(ns, spec.name)))
        return this.adopt(ns, spec, secret);
      throw e;
    }
    await this.writeSecret(ns, withOwner(secret, created), spec.name);
    return this.instance(created);
  }

  /** Creates the Pod's Secret (or replaces a leftover of an earlier Pod of this name); on failure removes the Pod. */
  private async writeSecret(ns: string, secret: V1Secret, instance: string): Promise<void> {
    const call: ApiCall = { verb: 'create', resource: 'secrets', namespace: ns, name: secretName(instance) };
    try {
      await this.api.createSecret(ns, secret);
      return;
    } catch (err) {
      if (!isAlreadyExists(err)) {
        const e = toEgressError(err, call);
        // A Pod without its Secret never starts: do not leave it behind.
        await this.api.deletePod(ns, instance).catch((d: unknown) => {
          this.deps.logger.warn('could not remove a Pod whose Secret was refused', {
            instance,
            error: toEgressError(d, { ...call, resource: 'pods', verb: 'delete', name: instance }).message,
          });
        });
        throw e;
      }
    }
    // The Pod was just created, so no other Pod mounts a Secret of this name: it is a leftover.
    await this.api.replaceSecret(ns, secretName(instance), secret).catch((u: unknown) => {
      throw toEgressError(u, { ...call, verb: 'update' });
    });
  }

  private async exists(ns: string, name: string): Promise<boolean> {
    return this.api.readPod(ns, name).then(
      () => true,
      () => false,
    );
  }

  async get(name: string): Promise<Instance> {
    const found = await Promise.allSettled(this.namespaces.map((ns) => this.api.readPod(ns, name)));
    let failure: EgressError | undefined;
    for (const [i, r] of found.entries()) {
      if (r.status === 'fulfilled') return this.instance(r.value);
      const e = toEgressError(r.reason, { verb: 'get', resource: 'pods', namespace: this.namespaces[i] ?? '', name });
      if (!(e instanceof NotFoundError)) failure ??= e;
    }
    // Absence is only certain when every managed namespace said 404.
    if (failure) throw failure;
    throw new NotFoundError(`pod ${name} not found in ${this.namespaces.join(', ')} (${this.api.server})`);
  }

  async delete(name: string): Promise<void> {
    for (const ns of this.namespaces) {
      const gone = (resource: 'pods' | 'secrets', target: string) => (err: unknown) => {
        const e = toEgressError(err, { verb: 'delete', resource, namespace: ns, name: target });
        if (!(e instanceof NotFoundError)) throw e;
      };
      // The Pod first: a terminating Pod stays visible to `get` until the kubelet confirms it stopped.
      await this.api.deletePod(ns, name, await this.graceFor(ns, name)).catch(gone('pods', name));
      await this.api.deleteSecret(ns, secretName(name)).catch(gone('secrets', secretName(name)));
    }
  }

  /** 0 (forced) for a Pod past deletionTimestamp + forceDeleteAfterSeconds, else the Pod's own grace. */
  private async graceFor(ns: string, name: string): Promise<number | undefined> {
    const pod = await this.api.readPod(ns, name).catch(() => undefined);
    const due = pod?.metadata.deletionTimestamp;
    if (due === undefined || this.now() < due + this.options.forceDeleteAfterSeconds * 1000) return undefined;
    this.deps.logger.warn('forcing the delete of a Pod its node never confirmed stopped', {
      instance: name,
      namespace: ns,
    });
    return 0;
  }

  async list(): Promise<Instance[]> {
    const selector = ownerSelector(this.installationId, this.name);
    const instances: Instance[] = [];
    for (const ns of this.namespaces) {
      const pods = await this.api.listPods(ns, selector).catch((err: unknown) => {
        const e = toEgressError(err, { verb: 'list', resource: 'pods', namespace: ns });
        throw e instanceof RetryableError ? e : new RetryableError(`listing is incomplete: ${e.message}`);
      });
      for (const pod of pods) {
        const owner = ownerOf(pod);
        if (owner?.installationId === this.installationId && owner.provider === this.name)
          instances.push(this.instance(pod));
      }
    }
    return instances;
  }

  async check(): Promise<ProviderHealth> {
    const started = performance.now();
    const detail: Record<string, { ok: boolean; message: string }> = {};
    let current = '';
    try {
      for (const ns of this.namespaces) {
        current = ns;
        const allowed = await Promise.all(REQUIRED_ACCESS.map((a) => this.api.canI(ns, a.verb, a.resource)));
        const missing = REQUIRED_ACCESS.filter((_, i) => !allowed[i]).map((a) => `${a.verb} ${a.resource}`);
        detail[ns] = missing.length
          ? { ok: false, message: `missing RBAC permission: ${missing.join(', ')}` }
          : { ok: true, message: 'all permissions granted' };
      }
    } catch (err) {
      const e = toEgressError(err, { verb: 'create', resource: 'selfsubjectaccessreviews', namespace: current });
      const latencyMs = Math.round(performance.now() - started);
      return { ok: false, message: `Kubernetes API ${this.api.server} is not usable: ${e.message}`, latencyMs };
    }
    const latencyMs = Math.round(performance.now() - started);
    const bad = Object.entries(detail).filter(([, d]) => !d.ok);
    if (bad.length === 0)
      return {
        ok: true,
        message: `${this.api.server} reachable; RBAC complete in ${this.namespaces.join(', ')}`,
        latencyMs,
        detail,
      };
    const message = bad.map(([ns, d]) => `namespace ${ns}: ${d.message}`).join('; ');
    return { ok: false, message, latencyMs, detail };
  }

  /** An existing Pod of this name: ours (same installation and provider) is adopted as it is. */
  /**
   * Adopts this proxy's Pod that already exists. Its Secret is never replaced or deleted (the Pod
   * mounts it); it is only created when an earlier create stopped between the Pod and the Secret.
   */
  private async adopt(ns: string, spec: InstanceSpec, secret: V1Secret): Promise<Instance> {
    const pod = await this.api.readPod(ns, spec.name).catch((err: unknown) => {
      throw toEgressError(err, { verb: 'get', resource: 'pods', namespace: ns, name: spec.name });
    });
    const owner = ownerOf(pod);
    if (owner?.installationId !== this.installationId || owner.provider !== this.name || owner.proxy !== spec.proxy)
      throw new PermanentError(
        `a Pod named ${spec.name} exists in namespace ${ns} and is not this proxy's`,
        'metadata.name',
      );
    await this.api.createSecret(ns, withOwner(secret, pod)).catch((err: unknown) => {
      if (!isAlreadyExists(err))
        throw toEgressError(err, { verb: 'create', resource: 'secrets', namespace: ns, name: secretName(spec.name) });
    });
    this.deps.logger.debug('adopted an existing Pod', { provider: this.name, instance: spec.name, namespace: ns });
    return this.instance(pod);
  }

  private instance(pod: PodView): Instance {
    const graceMs = this.options.unschedulableSeconds * 1000;
    const notReadyMs = this.options.notReadySeconds * 1000;
    return podToInstance(pod, `${this.optionsPath}.image`, { graceMs, notReadyMs, now: this.now() });
  }
}

/** The Secret owned by its Pod (https://kubernetes.io/docs/concepts/architecture/garbage-collection/#owners-dependents). */
function withOwner(secret: V1Secret, pod: PodView): V1Secret {
  const uid = pod.metadata.uid;
  if (!uid) return secret;
  const owner = { apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid };
  return { ...secret, metadata: { ...secret.metadata, ownerReferences: [owner] } };
}

function isAlreadyExists(err: unknown): boolean {
  return err instanceof KubeApiError && err.alreadyExists;
}

/**
 * Builds a `kubernetes` provider. Cheap: options are validated now, the SDK loads on the first call.
 *
 * @throws ValidationError naming `config.providers.N.options.<key>`
 * @example FACTORIES.kubernetes = createKubernetesProvider;
 */
export function createKubernetesProvider(deps: KubernetesProviderDeps): Provider {
  return new KubernetesProvider(deps);
}
