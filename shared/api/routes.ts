/**
 * The API's routes (docs/api.md), the one table: the server dispatches by it (shared/api/handler.ts)
 * and the client calls by it (shared/api/client.ts). It names the answers' zod schemas rather than
 * importing them, so the dashboard's browser bundle takes the table without zod.
 */
import type { z } from 'zod';
import type { demandReportSchema } from '../domain/autoscale.js';
import type { reportRequestSchema } from '../domain/reports.js';
import type * as answers from './schema.js';
import type { ApiScope } from './scopes.js';

/** The answer schemas of shared/api/schema.ts, as a client that checks answers is given them. */
export type AnswerSchemas = typeof answers;

/** The name of one of those schemas. */
export type AnswerName = {
  [K in keyof AnswerSchemas]: AnswerSchemas[K] extends z.ZodType ? K : never;
}[keyof AnswerSchemas];

/** One route of the API. */
export interface RouteSpec {
  method: 'GET' | 'PUT' | 'DELETE' | 'POST';
  /** The path; `{name}` stands for one segment, percent-encoded, and checked by the server as a DNS-1123 label. */
  path: string;
  /** What the caller's token must grant (shared/api/scopes.ts), or `public`: no token at all. */
  scope: ApiScope | 'public';
  /** The schema of a 2xx answer in shared/api/schema.ts, or `text`: a page, not JSON. */
  answer: AnswerName | 'text';
  /** Paged by `?cursor=` and `?limit=`; the next page's cursor is in `X-Next-Cursor` (shared/api/paging.ts). */
  paged?: true;
}

/** Every route. Discovery, reports and demand are what a gateway needs, so `discover` is all it is given. */
export const ROUTES = {
  health: { method: 'GET', path: '/healthz', scope: 'public', answer: 'healthzSchema' },
  dashboard: { method: 'GET', path: '/', scope: 'public', answer: 'text' },
  // `format=urls` answers text/plain, one URL a line: a client asks for it with `send`.
  discovery: { method: 'GET', path: '/v1/discovery', scope: 'discover', answer: 'discoveryListSchema', paged: true },
  report: { method: 'POST', path: '/v1/proxies/{name}/reports', scope: 'discover', answer: 'reportAcceptedSchema' },
  demand: { method: 'POST', path: '/v1/pools/{name}/demand', scope: 'discover', answer: 'demandAcceptedSchema' },
  listProxies: { method: 'GET', path: '/v1/proxies', scope: 'read', answer: 'proxyListSchema', paged: true },
  getProxy: { method: 'GET', path: '/v1/proxies/{name}', scope: 'read', answer: 'proxyWithEventsSchema' },
  listProviders: { method: 'GET', path: '/v1/providers', scope: 'read', answer: 'providerListSchema' },
  listRelays: { method: 'GET', path: '/v1/relays', scope: 'read', answer: 'relayListSchema' },
  listPools: { method: 'GET', path: '/v1/pools', scope: 'read', answer: 'poolListSchema' },
  getPool: { method: 'GET', path: '/v1/pools/{name}', scope: 'read', answer: 'poolSchema' },
  putProxy: { method: 'PUT', path: '/v1/proxies/{name}', scope: 'admin', answer: 'acceptedSchema' },
  deleteProxy: { method: 'DELETE', path: '/v1/proxies/{name}', scope: 'admin', answer: 'acceptedSchema' },
  putPool: { method: 'PUT', path: '/v1/pools/{name}', scope: 'admin', answer: 'acceptedSchema' },
  deletePool: { method: 'DELETE', path: '/v1/pools/{name}', scope: 'admin', answer: 'acceptedSchema' },
} as const satisfies Record<string, RouteSpec>;

export type Routes = typeof ROUTES;
export type RouteName = keyof Routes;

/** A route of the table with its name. */
export type Route = RouteSpec & { name: RouteName };

/** The routes as a list. */
export const ROUTE_LIST = Object.entries(ROUTES).map(([name, spec]) => ({ name, ...spec })) as readonly Route[];

/**
 * The JSON body each route takes; a route not named here takes none. A document to apply is any
 * object: the server validates it and names the field that is wrong, so the dashboard sends what
 * the user pasted as it is.
 */
export interface RouteBodies {
  report: z.input<typeof reportRequestSchema>;
  demand: z.input<typeof demandReportSchema>;
  putProxy: Record<string, unknown>;
  putPool: Record<string, unknown>;
}

/** The parsed 2xx answer of route `K`; a `text` route's is its text. */
export type Answer<K extends RouteName> = Routes[K]['answer'] extends infer N extends AnswerName
  ? z.output<AnswerSchemas[N]>
  : string;
