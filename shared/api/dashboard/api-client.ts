/** The dashboard's calls of the JSON API (docs/api.md): the shared client with the token typed in, at paths relative to the page. */
import { ApiError } from '../api-error.js';
import { createRouteClient, type RouteClient } from '../client.js';
import type { Answer } from '../routes.js';
import type { ApiDiscovered, ApiPool, ApiProviderList, ApiProxy, ApiProxyWithEvents, ApiRelay } from '../schema.js';

// The answers' types are the API schema's (shared/api/schema.ts), under the dashboard's names.
export type {
  ApiPoolMember as PoolMember,
  ApiPool as Pool,
  ApiCondition as Condition,
  ApiProxy as Proxy,
  ApiEvent as ProxyEvent,
  ApiProxyWithEvents as ProxyDetail,
  ApiProvider as ProviderHealth,
  ApiProviderList as ProviderList,
  ApiRelay as Relay,
  ApiDiscovered as DiscoveryEntry,
} from '../schema.js';
export type Accepted = Answer<'putProxy'>;

/** `Validation: spec.provider: … (field spec.provider)`: what the user reads. */
export function describeError(err: unknown): string {
  if (err instanceof ApiError) return `${err.code}: ${err.message}${err.field ? ` (field ${err.field})` : ''}`;
  return err instanceof Error ? err.message : String(err);
}

/** The API's base: the page's own path, so `/` (Cloud Run) and `/api` (a path prefix) both work. */
function apiBase(): string {
  const path = window.location.pathname;
  return `${window.location.origin}${path.endsWith('/') ? path : `${path}/`}`;
}

/**
 * The signed-in session's client. Answers are typed by their schemas, not parsed: that would put
 * zod in the page. Every call throws ApiError (shared/api/api-error.ts) for anything but 2xx.
 */
export class Api {
  private readonly api: RouteClient;

  constructor(token: string) {
    this.api = createRouteClient({ baseUrl: apiBase(), token });
  }

  /** Every proxy, page after page (shared/api/paging.ts). */
  proxies(): Promise<ApiProxy[]> {
    return this.api.every('listProxies', {});
  }

  proxy(name: string): Promise<ApiProxyWithEvents> {
    return this.api.call('getProxy', { name });
  }

  providers(): Promise<ApiProviderList> {
    return this.api.call('listProviders');
  }

  async relays(): Promise<ApiRelay[]> {
    return (await this.api.call('listRelays')).items;
  }

  /** Every proxy discovery hands out, page after page. */
  discovery(): Promise<ApiDiscovered[]> {
    return this.api.every('discovery', { query: { format: 'json' } });
  }

  /** `PUT /v1/pools/{name}` for a `kind: ProxyPool` document, `PUT /v1/proxies/{name}` otherwise. */
  apply(name: string, document: Record<string, unknown>): Promise<Accepted> {
    return this.api.call(document['kind'] === 'ProxyPool' ? 'putPool' : 'putProxy', { name, body: document });
  }

  async pools(): Promise<ApiPool[]> {
    return (await this.api.call('listPools')).items;
  }

  /** Applies the pool as stored with `replicas` N (minAvailable lowered to N when above it). */
  async scalePool(name: string, replicas: number): Promise<Accepted> {
    const pool = await this.api.call('getPool', { name });
    const spec = { ...pool.spec, replicas };
    if (spec.minAvailable !== undefined && spec.minAvailable > replicas) spec.minAvailable = replicas;
    const body = {
      apiVersion: pool.apiVersion,
      kind: pool.kind,
      metadata: { name, labels: pool.metadata.labels ?? {} },
      spec,
    };
    return this.api.call('putPool', { name, body });
  }

  remove(name: string): Promise<Accepted> {
    return this.api.call('deleteProxy', { name });
  }
}
