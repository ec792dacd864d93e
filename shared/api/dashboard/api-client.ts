/** The dashboard's client for the JSON API (docs/api.md): bearer token, typed answers, JSON errors as ApiFailure. */

import type { z } from 'zod';
import type {
  acceptedSchema,
  apiErrorBodySchema,
  discoveryListSchema,
  poolListSchema,
  poolSchema,
  providerListSchema,
  proxyListSchema,
  proxyWithEventsSchema,
  relayListSchema,
  ApiDiscovered,
  ApiPool,
  ApiProviderList,
  ApiProxy,
  ApiProxyWithEvents,
  ApiRelay,
} from '../schema.js';

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
export type Accepted = z.infer<typeof acceptedSchema>;

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

  /** One call; anything but 2xx becomes an ApiFailure. The answer is typed by its schema, not parsed (that would put zod in the page). */
  private async request<S extends z.ZodType>(method: string, path: string, body?: unknown): Promise<z.infer<S>> {
    return (await this.exchange<S>(method, path, body)).value;
  }

  /** As `request`, with the answer's headers (discovery's next page is in `X-Next-Cursor`). */
  private async exchange<S extends z.ZodType>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<{ value: z.infer<S>; headers: Headers }> {
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
      const error = (parsed as Partial<z.infer<typeof apiErrorBodySchema>> | undefined)?.error;
      throw new ApiFailure(
        res.status,
        error?.code ?? `HTTP ${res.status}`,
        error?.message ?? (text.slice(0, 200) || res.statusText),
        error?.field,
      );
    }
    return { value: parsed as z.infer<S>, headers: res.headers };
  }

  /** Every proxy, page after page (shared/api/paging.ts). */
  async proxies(): Promise<ApiProxy[]> {
    const items: ApiProxy[] = [];
    let cursor: string | null = null;
    do {
      const path: string = cursor === null ? 'v1/proxies' : `v1/proxies?cursor=${encodeURIComponent(cursor)}`;
      const page = await this.request<typeof proxyListSchema>('GET', path);
      items.push(...page.items);
      cursor = page.nextCursor ?? null;
    } while (cursor !== null);
    return items;
  }

  proxy(name: string): Promise<ApiProxyWithEvents> {
    return this.request<typeof proxyWithEventsSchema>('GET', `v1/proxies/${encodeURIComponent(name)}`);
  }

  providers(): Promise<ApiProviderList> {
    return this.request<typeof providerListSchema>('GET', 'v1/providers');
  }

  async relays(): Promise<ApiRelay[]> {
    return (await this.request<typeof relayListSchema>('GET', 'v1/relays')).items;
  }

  /** Every proxy discovery hands out, page after page (the next cursor travels in `X-Next-Cursor`). */
  async discovery(): Promise<ApiDiscovered[]> {
    const entries: ApiDiscovered[] = [];
    let cursor: string | null = null;
    do {
      const path: string = `v1/discovery?format=json${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`;
      const page = await this.exchange<typeof discoveryListSchema>('GET', path);
      entries.push(...page.value);
      cursor = page.headers.get('x-next-cursor');
    } while (cursor !== null);
    return entries;
  }

  /** `PUT /v1/pools/{name}` for a `kind: ProxyPool` document, `PUT /v1/proxies/{name}` otherwise. */
  apply(name: string, document: unknown): Promise<Accepted> {
    const kind = (document as { kind?: unknown } | null)?.kind;
    const collection = kind === 'ProxyPool' ? 'pools' : 'proxies';
    return this.request<typeof acceptedSchema>('PUT', `v1/${collection}/${encodeURIComponent(name)}`, document);
  }

  async pools(): Promise<ApiPool[]> {
    return (await this.request<typeof poolListSchema>('GET', 'v1/pools')).items;
  }

  /** Applies the pool as stored with `replicas` N (minAvailable lowered to N when above it). */
  async scalePool(name: string, replicas: number): Promise<Accepted> {
    const pool = await this.request<typeof poolSchema>('GET', `v1/pools/${encodeURIComponent(name)}`);
    const spec = { ...pool.spec, replicas };
    if (spec.minAvailable !== undefined && spec.minAvailable > replicas) spec.minAvailable = replicas;
    const body = {
      apiVersion: pool.apiVersion,
      kind: pool.kind,
      metadata: { name, labels: pool.metadata.labels ?? {} },
      spec,
    };
    return this.request<typeof acceptedSchema>('PUT', `v1/pools/${encodeURIComponent(name)}`, body);
  }

  remove(name: string): Promise<Accepted> {
    return this.request<typeof acceptedSchema>('DELETE', `v1/proxies/${encodeURIComponent(name)}`);
  }
}
