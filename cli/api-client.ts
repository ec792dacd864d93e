/** The CLI's calls of the HTTP API (docs/api.md), over the shared client with every answer checked with zod. */
import { ApiError } from '../shared/api/api-error.js';
import { createRouteClient, type Query } from '../shared/api/client.js';
import { createApiAuth } from '../shared/api/cloud-run-auth.js';
import type { PoolApplyRequest } from '../shared/domain/pool.js';
import type { ApplyRequest } from '../shared/domain/proxy.js';
import * as answers from '../shared/api/schema.js';
import type {
  ApiDiscovered,
  ApiPool,
  ApiProviderList,
  ApiProxy,
  ApiProxyWithEvents,
  ApiReportAccepted,
} from '../shared/api/schema.js';
import type { RouteBodies } from '../shared/api/routes.js';
import type { CliConfig } from './config.js';
import { DISCOVERY_PAGE } from '../shared/api/paging.js';

/** Filters of `GET /v1/proxies`. */
export interface ListFilters {
  provider?: string | undefined;
  phase?: string | undefined;
  labels?: readonly string[] | undefined;
}

/** Filters of `GET /v1/discovery`. */
export interface DiscoveryFilters {
  provider?: string | undefined;
  pool?: string | undefined;
  /** `?for=`: leave out proxies reported for this domain. */
  forDomain?: string | undefined;
  labels?: readonly string[] | undefined;
  maxLatencyMs?: number | undefined;
  /** `?country=`: located there and not `EgressVerified=False`. */
  country?: string | undefined;
  /** `?asn=`: the egress IP's autonomous system. */
  asn?: number | undefined;
  distinct?: boolean | undefined;
  limit?: number | undefined;
  random?: boolean | undefined;
}

/** Everything the CLI asks of the API. */
export interface ApiClient {
  listProxies(filters?: ListFilters): Promise<ApiProxy[]>;
  /** @returns the proxy with its events, or undefined on 404 */
  getProxy(name: string): Promise<ApiProxyWithEvents | undefined>;
  applyProxy(request: ApplyRequest): Promise<void>;
  deleteProxy(name: string): Promise<void>;
  /** `POST /v1/proxies/{name}/reports`: feedback from traffic. */
  reportProxy(name: string, report: RouteBodies['report']): Promise<ApiReportAccepted>;
  /** The providers' health and the egress-location database's releases. */
  listProviders(): Promise<ApiProviderList>;
  discover(filters: DiscoveryFilters): Promise<ApiDiscovered[]>;
  /** @returns the `text/plain` URL list, one `http://user:pass@ip:port` per line */
  discoverUrls(filters: DiscoveryFilters): Promise<string[]>;
  listPools(): Promise<ApiPool[]>;
  /** @returns the pool with its members and events, or undefined on 404 */
  getPool(name: string): Promise<ApiPool | undefined>;
  applyPool(request: PoolApplyRequest | Omit<PoolApplyRequest, 'action'>): Promise<void>;
  deletePool(name: string): Promise<void>;
}

function discoveryQuery(f: DiscoveryFilters, format: 'json' | 'urls'): Query {
  return {
    provider: f.provider,
    pool: f.pool,
    for: f.forDomain,
    label: f.labels,
    maxLatencyMs: f.maxLatencyMs,
    country: f.country,
    asn: f.asn,
    distinct: f.distinct,
    // A page reads at most DISCOVERY_PAGE.max proxies; a larger limit is met over several pages.
    limit: f.limit === undefined ? undefined : Math.min(f.limit, DISCOVERY_PAGE.max),
    order: f.random ? 'random' : undefined,
    format,
  };
}

/** `read`'s answer, or undefined when the API says 404. */
async function unlessMissing<T>(read: () => Promise<T>): Promise<T | undefined> {
  try {
    return await read();
  } catch (err) {
    if (err instanceof ApiError && err.status === 404) return undefined;
    throw err;
  }
}

/** Discovery's `format=urls` answer: one proxy URL per line, each checked. */
async function urlList(res: Response): Promise<string[]> {
  const lines = (await res.text())
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const parsed = answers.discoveryUrlsSchema.safeParse(lines);
  if (!parsed.success) {
    const line = lines[Number(parsed.error.issues[0]?.path[0] ?? 0)] ?? '';
    throw new ApiError('BadResponse', `unexpected line in the URL list: "${line.slice(0, 80)}"`, {
      status: res.status,
    });
  }
  return parsed.data;
}

/**
 * @param config - the API URL and token, and whether to send a Google ID token
 * @param signal - aborts requests in flight (Ctrl-C)
 * @returns a client; its methods throw ApiError (shared/api/api-error.ts)
 */
export function createApiClient(config: CliConfig, signal?: AbortSignal): ApiClient {
  const api = createRouteClient({
    baseUrl: config.apiUrl,
    token: config.token,
    auth: createApiAuth(config.apiAuth),
    answers,
    signal,
  });
  return {
    listProxies: (f = {}) =>
      api.every('listProxies', { query: { phase: f.phase, provider: f.provider, label: f.labels } }),
    getProxy: (name) => unlessMissing(() => api.call('getProxy', { name })),
    async applyProxy(request) {
      const { action: _action, ...body } = request;
      await api.call('putProxy', { name: request.metadata.name, body });
    },
    async deleteProxy(name) {
      await api.call('deleteProxy', { name });
    },
    reportProxy: (name, report) => api.call('report', { name, body: report }),
    listProviders: () => api.call('listProviders'),
    listPools: async () => (await api.call('listPools')).items,
    getPool: (name) => unlessMissing(() => api.call('getPool', { name })),
    async applyPool(request) {
      // The request may come with or without its `action`; the body never carries it.
      const { action: _action, ...body } = { action: 'apply', ...request };
      await api.call('putPool', { name: request.metadata.name, body });
    },
    async deletePool(name) {
      await api.call('deletePool', { name });
    },
    discover: (f) => api.every('discovery', { query: discoveryQuery(f, 'json') }, { limit: f.limit }),
    discoverUrls: (f) =>
      api.every('discovery', { query: discoveryQuery(f, 'urls') }, { limit: f.limit, read: urlList }),
  };
}
