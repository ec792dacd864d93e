/** A small client of the HTTP API (docs/api.md) over global fetch; every answer is checked with zod. */
import type { z } from 'zod';
import type { PoolApplyRequest } from '../shared/domain/pool.js';
import type { ApplyRequest } from '../shared/domain/proxy.js';
import {
  acceptedSchema,
  apiErrorBodySchema,
  discoveryListSchema,
  discoveryUrlsSchema,
  poolListSchema,
  poolSchema,
  providerListSchema,
  proxyListSchema,
  proxyWithEventsSchema,
  reportAcceptedSchema,
  type ApiDiscovered,
  type ApiPool,
  type ApiProvider,
  type ApiProxy,
  type ApiProxyWithEvents,
  type ApiReportAccepted,
} from '../shared/api/schema.js';
import type { CliConfig } from './config.js';

/** The API answered with an error, or could not be reached, or answered something unexpected. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    /** The API's error code (`NotFound`, `Validation`, …), `Network`, or `BadResponse`. */
    readonly code: string,
    /** The HTTP status, 0 when the API could not be reached. */
    readonly status: number,
    /** The offending field path, for `Validation`. */
    readonly field?: string,
  ) {
    super(message);
  }

  /** Worth retrying while waiting: the API or a dependency is briefly away. */
  get transient(): boolean {
    return this.status === 0 || this.status >= 500;
  }
}

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
  reportProxy(name: string, report: { reason: string; target?: string; detail?: string }): Promise<ApiReportAccepted>;
  listProviders(): Promise<ApiProvider[]>;
  discover(filters: DiscoveryFilters): Promise<ApiDiscovered[]>;
  /** @returns the `text/plain` URL list, one `http://user:pass@ip:port` per line */
  discoverUrls(filters: DiscoveryFilters): Promise<string[]>;
  listPools(): Promise<ApiPool[]>;
  /** @returns the pool with its members and events, or undefined on 404 */
  getPool(name: string): Promise<ApiPool | undefined>;
  applyPool(request: PoolApplyRequest | Omit<PoolApplyRequest, 'action'>): Promise<void>;
  deletePool(name: string): Promise<void>;
}

function query(pairs: [string, string | number | boolean | undefined][]): string {
  const params = new URLSearchParams();
  for (const [k, v] of pairs) if (v !== undefined && v !== false) params.append(k, String(v));
  const text = params.toString();
  return text ? `?${text}` : '';
}

function discoveryQuery(f: DiscoveryFilters, format: 'json' | 'urls'): string {
  return query([
    ['provider', f.provider],
    ['pool', f.pool],
    ['for', f.forDomain],
    ...(f.labels ?? []).map((l): [string, string] => ['label', l]),
    ['maxLatencyMs', f.maxLatencyMs],
    ['distinct', f.distinct],
    ['limit', f.limit],
    ['order', f.random ? 'random' : undefined],
    ['format', format],
  ]);
}

/**
 * @param config - the API URL and token
 * @param signal - aborts requests in flight (Ctrl-C)
 * @returns a client; its methods throw ApiError
 */
export function createApiClient(config: CliConfig, signal?: AbortSignal): ApiClient {
  const call = async (method: string, path: string, body?: unknown): Promise<Response> => {
    const headers: Record<string, string> = { accept: 'application/json, text/plain' };
    if (config.token) headers['authorization'] = `Bearer ${config.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${config.apiUrl}${path}`, {
        method,
        headers,
        ...(body !== undefined && { body: JSON.stringify(body) }),
        ...(signal && { signal }),
      });
    } catch (err) {
      if (signal?.aborted) throw err;
      const cause = err instanceof Error && err.cause instanceof Error ? `: ${err.cause.message}` : '';
      throw new ApiError(`cannot reach the API at ${config.apiUrl}${cause}`, 'Network', 0);
    }
    if (res.ok) return res;
    const text = await res.text();
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    const parsed = apiErrorBodySchema.safeParse(json);
    if (parsed.success) {
      const { code, message, field } = parsed.data.error;
      const hint = res.status === 401 && !config.token ? ' (no token: set EGRESS_TOKEN)' : '';
      throw new ApiError(`${message}${hint}`, code, res.status, field);
    }
    throw new ApiError(`HTTP ${res.status} from ${method} ${path}: ${text.slice(0, 200)}`, 'BadResponse', res.status);
  };

  const json = async <T extends z.ZodType>(schema: T, res: Response, what: string): Promise<z.output<T>> => {
    let value: unknown;
    try {
      value = await res.json();
    } catch {
      throw new ApiError(`the API answered ${what} with something that is not JSON`, 'BadResponse', res.status);
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      const at = issue?.path.length ? ` at ${issue.path.join('.')}` : '';
      throw new ApiError(
        `unexpected answer to ${what}${at}: ${issue?.message ?? 'invalid'}`,
        'BadResponse',
        res.status,
      );
    }
    return parsed.data;
  };

  const proxyPath = (name: string) => `/v1/proxies/${encodeURIComponent(name)}`;
  const poolPath = (name: string) => `/v1/pools/${encodeURIComponent(name)}`;

  return {
    async listProxies(f = {}) {
      const q = query([
        ['phase', f.phase],
        ['provider', f.provider],
        ...(f.labels ?? []).map((l): [string, string] => ['label', l]),
      ]);
      return (await json(proxyListSchema, await call('GET', `/v1/proxies${q}`), 'GET /v1/proxies')).items;
    },
    async getProxy(name) {
      try {
        return await json(proxyWithEventsSchema, await call('GET', proxyPath(name)), `GET ${proxyPath(name)}`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return undefined;
        throw err;
      }
    },
    async applyProxy(request) {
      const { action: _action, ...body } = request;
      await json(acceptedSchema, await call('PUT', proxyPath(request.metadata.name), body), 'PUT');
    },
    async deleteProxy(name) {
      await json(acceptedSchema, await call('DELETE', proxyPath(name)), 'DELETE');
    },
    async reportProxy(name, report) {
      const path = `${proxyPath(name)}/reports`;
      return json(reportAcceptedSchema, await call('POST', path, report), `POST ${path}`);
    },
    async listProviders() {
      return (await json(providerListSchema, await call('GET', '/v1/providers'), 'GET /v1/providers')).items;
    },
    async listPools() {
      return (await json(poolListSchema, await call('GET', '/v1/pools'), 'GET /v1/pools')).items;
    },
    async getPool(name) {
      try {
        return await json(poolSchema, await call('GET', poolPath(name)), `GET ${poolPath(name)}`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 404) return undefined;
        throw err;
      }
    },
    async applyPool(request) {
      const { action: _action, ...body } = request as PoolApplyRequest;
      await json(acceptedSchema, await call('PUT', poolPath(request.metadata.name), body), 'PUT');
    },
    async deletePool(name) {
      await json(acceptedSchema, await call('DELETE', poolPath(name)), 'DELETE');
    },
    async discover(f) {
      return json(discoveryListSchema, await call('GET', `/v1/discovery${discoveryQuery(f, 'json')}`), 'discovery');
    },
    async discoverUrls(f) {
      const res = await call('GET', `/v1/discovery${discoveryQuery(f, 'urls')}`);
      const lines = (await res.text())
        .split(/\r?\n/)
        .map((l) => l.trim())
        .filter(Boolean);
      const parsed = discoveryUrlsSchema.safeParse(lines);
      if (!parsed.success) {
        const line = lines[Number(parsed.error.issues[0]?.path[0] ?? 0)] ?? '';
        throw new ApiError(`unexpected line in the URL list: "${line.slice(0, 80)}"`, 'BadResponse', res.status);
      }
      return parsed.data;
    },
  };
}
