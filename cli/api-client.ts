/** A small client of the HTTP API (docs/api.md) over global fetch; every answer is checked with zod. */
import type { z } from 'zod';
import { createApiAuth, type ApiAuth } from '../shared/api/cloud-run-auth.js';
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
  type ApiProviderList,
  type ApiProxy,
  type ApiProxyWithEvents,
  type ApiReportAccepted,
} from '../shared/api/schema.js';
import type { CliConfig } from './config.js';
import { DISCOVERY_PAGE } from '../shared/api/paging.js';

/** The API answered with an error, or could not be reached, or answered something unexpected. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  constructor(
    message: string,
    /** The API's error code (`NotFound`, `Validation`, …), `Network`, `BadResponse`, or `CloudRunIam`. */
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
  reportProxy(name: string, report: { reason: string; target?: string; detail?: string }): Promise<ApiReportAccepted>;
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

function query(pairs: [string, string | number | boolean | undefined][]): string {
  const params = new URLSearchParams();
  for (const [k, v] of pairs) if (v !== undefined && v !== false) params.append(k, String(v));
  const text = params.toString();
  return text ? `?${text}` : '';
}

/**
 * Discovery's pages one after another (the next cursor travels in `X-Next-Cursor`), until the last
 * or until `f.limit` entries: a page reads at most `limit` proxies, so it may hold fewer.
 */
async function everyPage<T>(
  f: DiscoveryFilters,
  read: (cursor: string | null) => Promise<{ entries: T[]; next: string | null }>,
): Promise<T[]> {
  const entries: T[] = [];
  let cursor: string | null = null;
  do {
    const page = await read(cursor);
    entries.push(...page.entries);
    cursor = page.next;
  } while (cursor !== null && (f.limit === undefined || entries.length < f.limit));
  return f.limit === undefined ? entries : entries.slice(0, f.limit);
}

function discoveryQuery(f: DiscoveryFilters, format: 'json' | 'urls', cursor: string | null): string {
  return query([
    ['provider', f.provider],
    ['pool', f.pool],
    ['for', f.forDomain],
    ...(f.labels ?? []).map((l): [string, string] => ['label', l]),
    ['maxLatencyMs', f.maxLatencyMs],
    ['country', f.country],
    ['asn', f.asn],
    ['distinct', f.distinct],
    // A page reads at most DISCOVERY_PAGE.max proxies; a larger limit is met over several pages.
    ['limit', f.limit === undefined ? undefined : Math.min(f.limit, DISCOVERY_PAGE.max)],
    ['order', f.random ? 'random' : undefined],
    ['format', format],
    ['cursor', cursor ?? undefined],
  ]);
}

/** One request to the API: the JSON body sent, a non-2xx answer turned into an ApiError. */
type Call = (method: string, path: string, body?: unknown) => Promise<Response>;

function apiCall(config: CliConfig, auth: ApiAuth, signal?: AbortSignal): Call {
  return async (method, path, body) => {
    const headers: Record<string, string> = { accept: 'application/json, text/plain', ...(await auth.headers()) };
    if (config.token) headers['authorization'] = `Bearer ${config.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${config.apiUrl}${path}`, {
        method,
        headers,
        // The API never redirects; following one would carry X-Serverless-Authorization (which
        // fetch keeps across origins, unlike Authorization) to another host.
        redirect: 'error',
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
    const refused = auth.refusal(res.status, text);
    if (refused) throw new ApiError(refused, 'CloudRunIam', res.status);
    throw errorOf(res.status, text, `${method} ${path}`, Boolean(config.token));
  };
}

/** The ApiError for a non-2xx answer: the API's `{error}` body when it sent one. */
function errorOf(status: number, text: string, request: string, hasToken: boolean): ApiError {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = apiErrorBodySchema.safeParse(json);
  if (!parsed.success)
    return new ApiError(`HTTP ${status} from ${request}: ${text.slice(0, 200)}`, 'BadResponse', status);
  const { code, message, field } = parsed.data.error;
  const hint = status === 401 && !hasToken ? ' (no token: set EGRESS_TOKEN)' : '';
  return new ApiError(`${message}${hint}`, code, status, field);
}

/** The answer's JSON, parsed by `schema`; anything else is an ApiError saying where it differs. */
async function answer<T extends z.ZodType>(schema: T, res: Response, what: string): Promise<z.output<T>> {
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
    throw new ApiError(`unexpected answer to ${what}${at}: ${issue?.message ?? 'invalid'}`, 'BadResponse', res.status);
  }
  return parsed.data;
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
  const parsed = discoveryUrlsSchema.safeParse(lines);
  if (!parsed.success) {
    const line = lines[Number(parsed.error.issues[0]?.path[0] ?? 0)] ?? '';
    throw new ApiError(`unexpected line in the URL list: "${line.slice(0, 80)}"`, 'BadResponse', res.status);
  }
  return parsed.data;
}

/**
 * @param config - the API URL and token, and whether to send a Google ID token
 * @param signal - aborts requests in flight (Ctrl-C)
 * @returns a client; its methods throw ApiError, or IdTokenError when no ID token can be had
 */
export function createApiClient(config: CliConfig, signal?: AbortSignal): ApiClient {
  const call = apiCall(config, createApiAuth(config.apiAuth), signal);
  const proxyPath = (name: string) => `/v1/proxies/${encodeURIComponent(name)}`;
  const poolPath = (name: string) => `/v1/pools/${encodeURIComponent(name)}`;

  return {
    async listProxies(f = {}) {
      const items: ApiProxy[] = [];
      let cursor: string | null = null;
      do {
        const q = query([
          ['phase', f.phase],
          ['provider', f.provider],
          ...(f.labels ?? []).map((l): [string, string] => ['label', l]),
          ['cursor', cursor ?? undefined],
        ]);
        const page = await answer(proxyListSchema, await call('GET', `/v1/proxies${q}`), 'GET /v1/proxies');
        items.push(...page.items);
        cursor = page.nextCursor;
      } while (cursor !== null);
      return items;
    },
    getProxy: (name) =>
      unlessMissing(async () =>
        answer(proxyWithEventsSchema, await call('GET', proxyPath(name)), `GET ${proxyPath(name)}`),
      ),
    async applyProxy(request) {
      const { action: _action, ...body } = request;
      await answer(acceptedSchema, await call('PUT', proxyPath(request.metadata.name), body), 'PUT');
    },
    async deleteProxy(name) {
      await answer(acceptedSchema, await call('DELETE', proxyPath(name)), 'DELETE');
    },
    async reportProxy(name, report) {
      const path = `${proxyPath(name)}/reports`;
      return answer(reportAcceptedSchema, await call('POST', path, report), `POST ${path}`);
    },
    async listProviders() {
      return answer(providerListSchema, await call('GET', '/v1/providers'), 'GET /v1/providers');
    },
    async listPools() {
      return (await answer(poolListSchema, await call('GET', '/v1/pools'), 'GET /v1/pools')).items;
    },
    getPool: (name) =>
      unlessMissing(async () => answer(poolSchema, await call('GET', poolPath(name)), `GET ${poolPath(name)}`)),
    async applyPool(request) {
      // The request may come with or without its `action`; the body never carries it.
      const { action: _action, ...body } = { action: 'apply', ...request };
      await answer(acceptedSchema, await call('PUT', poolPath(request.metadata.name), body), 'PUT');
    },
    async deletePool(name) {
      await answer(acceptedSchema, await call('DELETE', poolPath(name)), 'DELETE');
    },
    discover: (f) =>
      everyPage(f, async (cursor) => {
        const res = await call('GET', `/v1/discovery${discoveryQuery(f, 'json', cursor)}`);
        return { entries: await answer(discoveryListSchema, res, 'discovery'), next: res.headers.get('x-next-cursor') };
      }),
    discoverUrls: (f) =>
      everyPage(f, async (cursor) => {
        const res = await call('GET', `/v1/discovery${discoveryQuery(f, 'urls', cursor)}`);
        return { entries: await urlList(res), next: res.headers.get('x-next-cursor') };
      }),
  };
}
