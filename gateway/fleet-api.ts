/** The calls the gateway makes to the fleet's HTTP API, over the shared client: discovery (one request per page), reports, demand. */
import type { DemandReport } from '../shared/domain/autoscale.js';
import { createRouteClient } from '../shared/api/client.js';
import { createApiAuth, type ApiAuth } from '../shared/api/cloud-run-auth.js';
import type { RouteBodies } from '../shared/api/routes.js';
import * as answers from '../shared/api/schema.js';
import type { ApiDemandAccepted, ApiDiscovered } from '../shared/api/schema.js';
import type { Upstream } from './selection.js';

/** Which proxies the gateway may use (docs/api.md, `GET /v1/discovery`). */
export interface FleetFilters {
  pool?: string | undefined;
  provider?: string | undefined;
  /** `key=value`, all must match. */
  labels?: readonly string[] | undefined;
  /**
   * With `pool`: at most 10 of the pool's Ready members read now, not from a page the API keeps
   * up to 2 s (`fresh=true`, docs/api.md): the look of a request held while its pool wakes.
   */
  fresh?: boolean | undefined;
}

/**
 * The body of `POST /v1/proxies/{name}/reports` (docs/api.md "Reports: feedback from traffic"), as
 * the gateway sends it: `observedAt` is when the failure was seen, so a report that arrives after
 * the proxy's instance was replaced bans nothing.
 */
export type ProxyReport = Omit<RouteBodies['report'], 'requestId'>;

/** The fleet as the gateway sees it; the API client below, or an in-memory twin in tests and benches. */
export interface FleetApi {
  /** The Ready proxies matching `filters`, and allowed for `forDomain` when given. */
  discover(filters: FleetFilters, forDomain?: string): Promise<Upstream[]>;
  report(name: string, report: ProxyReport): Promise<void>;
  /** `POST /v1/pools/{pool}/demand`; absent: this fleet takes no demand (nothing wakes). */
  demand?(pool: string, report: DemandReport): Promise<DemandAnswer>;
}

/** What the gateway takes from the API's answer to a demand report: whether the pool is autoscaled (a sleeping one wakes). */
export type DemandAnswer = Pick<ApiDemandAccepted, 'autoscaled'>;

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

/**
 * @param options.apiUrl - the API base URL (`EGRESS_API_URL`)
 * @param options.token - the bearer token (`EGRESS_TOKEN`)
 * @param options.auth - a Google ID token for Cloud Run IAM (shared/api/cloud-run-auth.ts; default: none)
 * @param options.timeoutMs - per request (default 5 s)
 * @returns the fleet; its calls throw ApiError (shared/api/api-error.ts)
 */
export function createFleetApi(options: {
  apiUrl: string;
  token?: string | undefined;
  auth?: ApiAuth | undefined;
  timeoutMs?: number;
}): FleetApi {
  const api = createRouteClient({
    baseUrl: options.apiUrl,
    token: options.token,
    auth: options.auth ?? createApiAuth(undefined),
    answers,
    timeoutMs: options.timeoutMs ?? 5000,
  });
  return {
    async discover(filters, forDomain) {
      const query = {
        format: 'json',
        pool: filters.pool,
        provider: filters.provider,
        label: filters.labels,
        for: forDomain,
        fresh: filters.fresh ? 'true' : undefined,
      };
      return (await api.every('discovery', { query })).map(upstreamOf);
    },
    async report(name, report) {
      // The answer says whether the report counted; the gateway sends and moves on.
      await (await api.send('report', { name, body: report })).body?.cancel();
    },
    async demand(pool, report) {
      const { autoscaled } = await api.call('demand', { name: pool, body: report });
      return { autoscaled };
    },
  };
}
