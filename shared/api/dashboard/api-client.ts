/** The dashboard's client for the JSON API (docs/api.md): bearer token, typed answers, JSON errors as ApiFailure. */

/** A pool member as `GET /v1/pools` lists it. */
export interface PoolMember {
  name: string;
  provider: string;
  entry: number;
  phase: string;
  draining: boolean;
}

/** A pool as `GET /v1/pools` lists it. */
export interface Pool {
  metadata: { name: string };
  spec: { replicas: number; minAvailable?: number } & Record<string, unknown>;
  status: {
    replicas: number;
    readyReplicas: number;
    entries: { provider: string; desired: number; ready: number; available: boolean }[];
  };
  members: PoolMember[];
}

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime: string;
}

export interface Health {
  ok: boolean;
  latencyMs?: number;
  egressIp?: string;
  error?: string;
  lastProbeAt: string;
  consecutiveFailures: number;
}

export interface Proxy {
  apiVersion: string;
  kind: string;
  metadata: {
    name: string;
    labels: Record<string, string>;
    generation: number;
    createdAt: string;
    deletionRequestedAt?: string;
  };
  spec: { provider: string; placement?: Record<string, unknown>; port?: number; maxAge?: string };
  status: {
    phase: string;
    address?: string;
    conditions: Condition[];
    health?: Health;
    egress?: { ip: string; checkedAt: string; sharedWith: string[] };
  };
}

export interface ProxyEvent {
  at: string;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
}

export type ProxyDetail = Proxy & { events: ProxyEvent[] };

export interface ProviderHealth {
  name: string;
  type: string;
  status: 'Healthy' | 'Unhealthy' | 'Unknown';
  message: string;
  latencyMs: number;
  lastCheckAt: string | null;
  detail?: Record<string, { ok: boolean; message: string }>;
}

export interface Relay {
  id: string;
  heartbeatAt: string | null;
  heartbeatAgeSeconds: number | null;
  startedAt: string | null;
  providers: { name: string; ok: boolean; message: string }[];
  instances: number;
}

export interface DiscoveryEntry {
  name: string;
  provider: string;
  url: string;
  egressIp: string | null;
  latencyMs: number | null;
}

export interface Accepted {
  accepted: true;
  name: string;
  messageId: string;
}

/** An answer other than 2xx, or no answer at all (`status` 0, code `Network`). */
export class ApiFailure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }

  /** `Validation: spec.provider: … (field spec.provider)`: what the user reads. */
  describe(): string {
    return `${this.code}: ${this.message}${this.field ? ` (field ${this.field})` : ''}`;
  }
}

export function describeError(err: unknown): string {
  if (err instanceof ApiFailure) return err.describe();
  return err instanceof Error ? err.message : String(err);
}

/** The API's base: the page's own path, so `/` (Cloud Run) and `/api` (a path prefix) both work. */
function apiBase(): string {
  const path = window.location.pathname;
  return `${window.location.origin}${path.endsWith('/') ? path : `${path}/`}`;
}

export class Api {
  private readonly base = apiBase();

  constructor(private readonly token: string) {}

  private async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.base), {
        method,
        headers: {
          authorization: `Bearer ${this.token}`,
          accept: 'application/json',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        cache: 'no-store',
      });
    } catch (err) {
      throw new ApiFailure(0, 'Network', `cannot reach the API (${err instanceof Error ? err.message : String(err)})`);
    }
    const text = await res.text();
    let parsed: unknown;
    try {
      parsed = text ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (!res.ok) {
      const error = (parsed as { error?: { code?: string; message?: string; field?: string } } | undefined)?.error;
      throw new ApiFailure(
        res.status,
        error?.code ?? `HTTP ${res.status}`,
        error?.message ?? (text.slice(0, 200) || res.statusText),
        error?.field,
      );
    }
    return parsed as T;
  }

  async proxies(): Promise<Proxy[]> {
    return (await this.request<{ items: Proxy[] }>('GET', 'v1/proxies')).items;
  }

  proxy(name: string): Promise<ProxyDetail> {
    return this.request('GET', `v1/proxies/${encodeURIComponent(name)}`);
  }

  async providers(): Promise<ProviderHealth[]> {
    return (await this.request<{ items: ProviderHealth[] }>('GET', 'v1/providers')).items;
  }

  async relays(): Promise<Relay[]> {
    return (await this.request<{ items: Relay[] }>('GET', 'v1/relays')).items;
  }

  discovery(): Promise<DiscoveryEntry[]> {
    return this.request('GET', 'v1/discovery?format=json');
  }

  /** `PUT /v1/pools/{name}` for a `kind: ProxyPool` document, `PUT /v1/proxies/{name}` otherwise. */
  apply(name: string, document: unknown): Promise<Accepted> {
    const kind = (document as { kind?: unknown } | null)?.kind;
    const collection = kind === 'ProxyPool' ? 'pools' : 'proxies';
    return this.request('PUT', `v1/${collection}/${encodeURIComponent(name)}`, document);
  }

  async pools(): Promise<Pool[]> {
    return (await this.request<{ items: Pool[] }>('GET', 'v1/pools')).items;
  }

  /** Applies the pool as stored with `replicas` N (minAvailable lowered to N when above it). */
  async scalePool(name: string, replicas: number): Promise<Accepted> {
    const pool = await this.request<Pool & { apiVersion: string; kind: string; metadata: { labels?: unknown } }>(
      'GET',
      `v1/pools/${encodeURIComponent(name)}`,
    );
    const spec = { ...pool.spec, replicas };
    if (spec.minAvailable !== undefined && spec.minAvailable > replicas) spec.minAvailable = replicas;
    const body = {
      apiVersion: pool.apiVersion,
      kind: pool.kind,
      metadata: { name, labels: pool.metadata.labels ?? {} },
      spec,
    };
    return this.request('PUT', `v1/pools/${encodeURIComponent(name)}`, body);
  }

  remove(name: string): Promise<Accepted> {
    return this.request('DELETE', `v1/proxies/${encodeURIComponent(name)}`);
  }
}
