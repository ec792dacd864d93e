/** The fake's objects (Pods, Secrets) with server-set metadata: uid, resourceVersion, creationTimestamp. */
import { randomUUID } from 'node:crypto';
import type { PodBody, SecretBody } from './schemas.js';
import { alreadyExists, notFound } from './status.js';

/** Metadata the server owns. `resourceVersion` changes on every write (one counter, like etcd's revision). */
export interface ServerMeta {
  namespace: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  deletionTimestamp?: string;
  deletionGracePeriodSeconds?: number;
}

export interface Condition {
  type: 'PodScheduled' | 'Initialized' | 'ContainersReady' | 'Ready';
  status: 'True' | 'False';
  reason?: string;
  message?: string;
  lastTransitionTime: string;
}

export interface ContainerStatus {
  name: string;
  image: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: {
    waiting?: { reason: string; message?: string };
    running?: { startedAt: string };
    terminated?: { reason: string; exitCode: number; message?: string };
  };
}

export interface PodStatus {
  phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'Unknown';
  conditions: Condition[];
  hostIP?: string;
  podIP?: string;
  podIPs?: { ip: string }[];
  startTime?: string;
  reason?: string;
  message?: string;
  containerStatuses?: ContainerStatus[];
}

export type StoredPod = PodBody & {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: PodBody['metadata'] & ServerMeta;
  spec: PodBody['spec'] & { nodeName?: string };
  status: PodStatus;
};

export type StoredSecret = SecretBody & {
  apiVersion: 'v1';
  kind: 'Secret';
  metadata: SecretBody['metadata'] & ServerMeta;
};

const key = (namespace: string, name: string) => `${namespace}/${name}`;

/** Pods and Secrets by namespace and name. */
export class ObjectStore {
  readonly namespaces: Set<string>;
  private readonly pods = new Map<string, StoredPod>();
  private readonly secrets = new Map<string, StoredSecret>();
  private revision = 1000;

  constructor(namespaces: string[]) {
    this.namespaces = new Set(namespaces);
  }

  /** The next resourceVersion (opaque to clients; a string of a growing number here). */
  nextVersion(): string {
    return String(++this.revision);
  }

  /** The list resourceVersion: the latest revision. */
  get listVersion(): string {
    return String(this.revision);
  }

  private meta(namespace: string): ServerMeta {
    return { namespace, uid: randomUUID(), resourceVersion: this.nextVersion(), creationTimestamp: stamp() };
  }

  createPod(namespace: string, body: PodBody): StoredPod {
    if (this.pods.has(key(namespace, body.metadata.name))) throw alreadyExists('pods', body.metadata.name);
    const pod: StoredPod = {
      ...body,
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...body.metadata, ...this.meta(namespace) },
      status: { phase: 'Pending', conditions: [] },
    };
    this.pods.set(key(namespace, pod.metadata.name), pod);
    return pod;
  }

  pod(namespace: string, name: string): StoredPod {
    const pod = this.pods.get(key(namespace, name));
    if (!pod) throw notFound('pods', name);
    return pod;
  }

  findPod(namespace: string, name: string): StoredPod | undefined {
    return this.pods.get(key(namespace, name));
  }

  listPods(namespace?: string): StoredPod[] {
    return [...this.pods.values()].filter((p) => namespace === undefined || p.metadata.namespace === namespace);
  }

  /** Records a change to a Pod (a new resourceVersion). */
  touch(pod: StoredPod | StoredSecret): void {
    pod.metadata.resourceVersion = this.nextVersion();
  }

  /**
   * Removes a Pod, and as the garbage collector does, the objects it owns: Secrets whose
   * `metadata.ownerReferences` name its uid
   * (https://kubernetes.io/docs/concepts/architecture/garbage-collection/#owners-dependents).
   * The real collector acts shortly after, in the background; the fake at once.
   */
  removePod(pod: StoredPod): void {
    const k = key(pod.metadata.namespace, pod.metadata.name);
    if (this.pods.get(k) !== pod) return;
    this.pods.delete(k);
    for (const [sk, secret] of this.secrets) {
      const owners: unknown = Reflect.get(secret.metadata, 'ownerReferences');
      const owned =
        Array.isArray(owners) && owners.some((o: unknown) => Reflect.get(Object(o), 'uid') === pod.metadata.uid);
      if (owned && secret.metadata.namespace === pod.metadata.namespace) this.secrets.delete(sk);
    }
  }

  createSecret(namespace: string, body: SecretBody): StoredSecret {
    if (this.secrets.has(key(namespace, body.metadata.name))) throw alreadyExists('secrets', body.metadata.name);
    const secret = this.secretFrom(namespace, body, this.meta(namespace));
    this.secrets.set(key(namespace, secret.metadata.name), secret);
    return secret;
  }

  /** PUT: the whole object replaced, uid and creationTimestamp kept. */
  replaceSecret(namespace: string, name: string, body: SecretBody): StoredSecret {
    const old = this.secret(namespace, name);
    const secret = this.secretFrom(namespace, body, { ...old.metadata, resourceVersion: this.nextVersion() });
    this.secrets.set(key(namespace, name), secret);
    return secret;
  }

  secret(namespace: string, name: string): StoredSecret {
    const secret = this.secrets.get(key(namespace, name));
    if (!secret) throw notFound('secrets', name);
    return secret;
  }

  findSecret(namespace: string, name: string): StoredSecret | undefined {
    return this.secrets.get(key(namespace, name));
  }

  listSecrets(namespace?: string): StoredSecret[] {
    return [...this.secrets.values()].filter((s) => namespace === undefined || s.metadata.namespace === namespace);
  }

  removeSecret(namespace: string, name: string): StoredSecret {
    const secret = this.secret(namespace, name);
    this.secrets.delete(key(namespace, name));
    return secret;
  }

  /** `stringData` is write-only: merged into `data` (base64) and not stored. */
  private secretFrom(namespace: string, body: SecretBody, meta: ServerMeta): StoredSecret {
    const { stringData, ...rest } = body;
    const data = { ...(body.data ?? {}) };
    for (const [k, v] of Object.entries(stringData ?? {})) data[k] = Buffer.from(v).toString('base64');
    return { ...rest, apiVersion: 'v1', kind: 'Secret', metadata: { ...body.metadata, ...meta, namespace }, data };
  }
}

/** RFC 3339 at second precision, as the API server writes timestamps. */
export function stamp(ms = Date.now()): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}
