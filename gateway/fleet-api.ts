/** The calls the gateway makes to the fleet's HTTP API: discovery (one request per list), reports, demand. */
import { z } from 'zod';
import type { DemandReport } from '../shared/domain/autoscale.js';
import { createApiAuth, type ApiAuth } from '../shared/api/cloud-run-auth.js';
import { IdTokenError } from '../shared/api/id-token.js';
import { discoveryListSchema, type ApiDiscovered } from '../shared/api/schema.js';
import type { reportRequestSchema } from '../shared/domain/reports.js';
import type { Upstream } from './selection.js';

/** Which proxies the gateway may use (docs/api.md, `GET /v1/discovery`). */
export interface FleetFilters {
  pool?: string | undefined;
  provider?: string | undefined;
  /** `key=value`, all must match. */
  labels?: readonly string[] | undefined;
}

/**
 * The body of `POST /v1/proxies/{name}/reports` (docs/api.md "Reports: feedback from traffic"), as
 * the gateway sends it: `observedAt` is when the failure was seen, so a report that arrives after
 * the proxy's instance was replaced bans nothing.
 */
export type ProxyReport = Omit<z.input<typeof reportRequestSchema>, 'requestId'>;

/** The fleet as the gateway sees it; the API client below, or an in-memory twin in tests and benches. */
export interface FleetApi {
  /** The Ready proxies matching `filters`, and allowed for `forDomain` when given. */
  discover(filters: FleetFilters, forDomain?: string): Promise<Upstream[]>;
  report(name: string, report: ProxyReport): Promise<void>;
  /** `POST /v1/pools/{pool}/demand`; absent: this fleet takes no demand (nothing wakes). */
  demand?(pool: string, report: DemandReport): Promise<DemandAnswer>;
}

/** What the API answers a demand report: whether the pool is autoscaled (a sleeping one wakes). */
export interface DemandAnswer {
  autoscaled: boolean;
}

/**
 * A discovery entry as the pieces the gateway dials with: its TLS listener (`tlsUrl`, pinned to
 * `tlsFingerprint`) when it has one, so the proxy's credentials never cross the network in clear;
 * else `http://user:pass@ip:port`.
 */
export function upstreamOf(entry: ApiDiscovered): Upstream {
  const secure =
    entry.tlsUrl && entry.tlsFingerprint ? { url: entry.tlsUrl, fingerprint: entry.tlsFingerprint } : undefined;
  const url = new URL(secure?.url ?? entry.url);
  const user = decodeURIComponent(url.username);
  const pass = decodeURIComponent(url.password);
  return {
    name: entry.name,
    provider: entry.provider,
    host: url.hostname.replace(/^\[|\]$/g, ''),
    port: Number(url.port || (secure ? 443 : 80)),
    authorization: `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`,
    egressIp: entry.egressIp ?? undefined,
    country: entry.country ?? undefined,
    asn: entry.asn ?? undefined,
    ...(secure && { tls: { fingerprint: secure.fingerprint } }),
  };
}

/** The API could not be reached or answered something unexpected. */
export class FleetApiError extends Error {
  override readonly name = 'FleetApiError';
  /** The API's HTTP status, when it answered. */
  constructor(
    message: string,
    options?: ErrorOptions,
    readonly status?: number,
  ) {
    super(message, options);
  }
}

/** The ID token headers, or a FleetApiError saying why there is none. */
async function authHeaders(auth: ApiAuth): Promise<Record<string, string>> {
  try {
    return await auth.headers();
  } catch (err) {
    if (err instanceof IdTokenError) throw new FleetApiError(err.message, { cause: err });
    throw err;
  }
}

/**
 * @param options.apiUrl - the API base URL (`EGRESS_API_URL`)
 * @param options.token - the bearer token (`EGRESS_TOKEN`)
 * @param options.auth - a Google ID token for Cloud Run IAM (shared/api/cloud-run-auth.ts; default: none)
 * @param options.timeoutMs - per request (default 5 s)
 */
export function createFleetApi(options: {
  apiUrl: string;
  token?: string | undefined;
  auth?: ApiAuth | undefined;
  timeoutMs?: number;
}): FleetApi {
  const base = options.apiUrl.replace(/\/+$/, '');
  const auth = options.auth ?? createApiAuth(undefined);
  const call = async (method: string, path: string, body?: unknown): Promise<Response> => {
    const headers: Record<string, string> = { accept: 'application/json', ...(await authHeaders(auth)) };
    if (options.token) headers['authorization'] = `Bearer ${options.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, {
        method,
        headers,
        // The API never redirects; following one would carry X-Serverless-Authorization (which
        // fetch keeps across origins, unlike Authorization) to another host.
        redirect: 'error',
        signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    } catch (err) {
      const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
      throw new FleetApiError(`cannot reach the API at ${base}: ${cause}`);
    }
    if (!res.ok) {
      const text = await res.text().catch(() => '');
      const refused = auth.refusal(res.status, text);
      if (refused) throw new FleetApiError(refused);
      throw new FleetApiError(
        `${method} ${path.split('?')[0] ?? path} answered ${res.status}: ${text.slice(0, 200)}`,
        undefined,
        res.status,
      );
    }
    return res;
  };
  return {
    async discover(filters, forDomain) {
      const params = new URLSearchParams({ format: 'json' });
      if (filters.pool) params.set('pool', filters.pool);
      if (filters.provider) params.set('provider', filters.provider);
      for (const l of filters.labels ?? []) params.append('label', l);
      if (forDomain) params.set('for', forDomain);
      // Every page: each reads at most `limit` proxies, the next cursor travels in X-Next-Cursor.
      const upstreams: Upstream[] = [];
      let cursor: string | null = null;
      do {
        if (cursor !== null) params.set('cursor', cursor);
        const res = await call('GET', `/v1/discovery?${params.toString()}`);
        const parsed = discoveryListSchema.safeParse(await res.json().catch(() => undefined));
        if (!parsed.success) {
          const issue = parsed.error.issues[0];
          throw new FleetApiError(
            `unexpected discovery answer at ${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''}`,
          );
        }
        upstreams.push(...parsed.data.map(upstreamOf));
        cursor = res.headers.get('x-next-cursor');
      } while (cursor !== null);
      return upstreams;
    },
    async report(name, report) {
      const res = await call('POST', `/v1/proxies/${encodeURIComponent(name)}/reports`, report);
      await res.body?.cancel();
    },
    async demand(pool, report) {
      const res = await call('POST', `/v1/pools/${encodeURIComponent(pool)}/demand`, report);
      const parsed = z.looseObject({ autoscaled: z.boolean() }).safeParse(await res.json().catch(() => undefined));
      if (!parsed.success) throw new FleetApiError('unexpected demand answer: no "autoscaled"');
      return { autoscaled: parsed.data.autoscaled };
    },
  };
}
