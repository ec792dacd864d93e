/** The HTTP API's routes (docs/api.md): proxies, reports, discovery, providers, relays, the dashboard. */
import type { ProxyDoc } from '../domain/status.js';
import { dnsLabel } from '../domain/names.js';
import { EgressError, ValidationError } from '../errors.js';
import type { ApiDeps } from './deps.js';
import type { ProxyPage } from '../store/ports.js';
import { grpcCode, GRPC_CODES } from '../store/grpc-codes.js';
import { CallerGone } from '../store/firestore/transaction.js';
import {
  matchesLabels,
  parseDiscoveryQuery,
  parseLabelFilters,
  proxyUrl,
  selectForDiscovery,
  tlsEndpoint,
  type DiscoveryQuery,
} from './discovery.js';
import { documentView } from './views.js';
import { encodeCursor, nextPageHeaders, parseCursor, parseLimit, PROXY_PAGE } from './paging.js';
import { deletePool, getPool, listPools, putPool, refuseMemberRequest } from './pools.js';
import { ApiError } from './api-error.js';
import { callerId, errorAnswer, tokenScope, type ApiRequest, type ApiResponse } from './http.js';
import { ROUTE_LIST, ROUTES, type RouteName } from './routes.js';
import { grants, type ApiScope } from './scopes.js';
import { dashboardPage } from './dashboard-page.js';
import { postReport } from './reports.js';
import { postDemand } from './demand.js';
import { parsePutBody } from './put-body.js';
import { TOPICS } from '../bus/topics.js';
import { EGRESS_DATABASE } from '../egress-location/release.js';

/** A Proxy as the API shows it: the stored document without its lease and bookkeeping. */
export function proxyView(doc: ProxyDoc) {
  return documentView(doc);
}

/** A name from the path; 400 naming `metadata.name` when it is not percent-encoded well or not a DNS-1123 label. */
function nameFrom(raw: string): string {
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    throw new ApiError('Validation', 'metadata.name: the path has a malformed percent-encoding', {
      field: 'metadata.name',
    });
  }
  const parsed = dnsLabel.safeParse(name);
  if (!parsed.success)
    throw new ApiError('Validation', `metadata.name: ${parsed.error.issues[0]?.message ?? 'invalid'}`, {
      field: 'metadata.name',
    });
  return name;
}

/** One page of proxies in name order: at most `limit` read, the filters applied to those (so a page may hold fewer). */
async function listProxies(deps: ApiDeps, q: URLSearchParams): Promise<ApiResponse> {
  const labels = parseLabelFilters(q.getAll('label'));
  const phase = q.get('phase');
  const provider = q.get('provider');
  const page = await deps.proxies.page(parseCursor(q.get('cursor')), parseLimit(q.get('limit'), PROXY_PAGE));
  const items = page.items
    .map((item) => item.doc)
    .filter(
      (d) =>
        (!phase || d.status.phase === phase) && (!provider || d.spec.provider === provider) && matchesLabels(d, labels),
    );
  return {
    status: 200,
    headers: nextPageHeaders(ROUTES.listProxies.path, q, page.next),
    body: { items: items.map(proxyView), nextCursor: page.next === null ? null : encodeCursor(page.next) },
  };
}

async function getProxy(deps: ApiDeps, name: string): Promise<ApiResponse> {
  const doc = (await deps.proxies.get(name))?.doc;
  if (!doc) throw new ApiError('NotFound', `proxy "${name}" not found`);
  return { status: 200, body: { ...proxyView(doc), events: await deps.proxies.events(name, 20) } };
}

async function putProxy(deps: ApiDeps, name: string, body: unknown): Promise<ApiResponse> {
  const request = parsePutBody(name, body);
  const existing = (await deps.proxies.get(name))?.doc;
  refuseMemberRequest(existing);
  if (existing && existing.spec.provider !== request.spec.provider) {
    throw new ApiError(
      'Conflict',
      `spec.provider is immutable: proxy "${name}" uses provider "${existing.spec.provider}"; delete it first`,
      { field: 'spec.provider' },
    );
  }
  const messageId = await deps.bus.publish(TOPICS.proxyRequests, request, { action: 'apply' });
  return { status: 202, body: { accepted: true, name, messageId } };
}

async function deleteProxy(deps: ApiDeps, name: string): Promise<ApiResponse> {
  const existing = (await deps.proxies.get(name))?.doc;
  if (!existing) throw new ApiError('NotFound', `proxy "${name}" not found`);
  refuseMemberRequest(existing);
  const request = { apiVersion: 'egress.dev/v1', kind: 'Proxy', action: 'delete', metadata: { name } };
  const messageId = await deps.bus.publish(TOPICS.proxyRequests, request, { action: 'delete' });
  return { status: 202, body: { accepted: true, name, messageId } };
}

/** What a discovery chooses from: a page of the fleet, or (`fresh=true`) its pool's Ready members read now. */
async function readForDiscovery(deps: ApiDeps, q: DiscoveryQuery, now: number): Promise<ProxyPage> {
  const cache = deps.discoveryCache;
  if (q.freshPool === undefined)
    return cache ? cache.page(deps.proxies, q.cursor, q.limit, now) : deps.proxies.page(q.cursor, q.limit);
  const items = await (cache
    ? cache.readyInPool(deps.proxies, q.freshPool, q.limit, now)
    : deps.proxies.readyInPool(q.freshPool, q.limit));
  return { items, next: null, readTime: now };
}

async function discovery(deps: ApiDeps, params: URLSearchParams, signal?: AbortSignal): Promise<ApiResponse> {
  const q = parseDiscoveryQuery(params);
  const now = (deps.now ?? Date.now)();
  const page = await readForDiscovery(deps, q, now);
  if (signal?.aborted) throw new CallerGone();
  const picked = selectForDiscovery(
    page.items.map((item) => item.doc),
    q,
    Math.random,
    now,
  );
  // The body stays a JSON array (clients parse it as one); the next page is in the headers.
  const headers = nextPageHeaders(ROUTES.discovery.path, params, page.next);
  // The credentials are read at once, not one round trip after another (a gateway asks every 2 s
  // with a 5 s timeout, and a slow answer leaves it on a stale list), and remembered per instance.
  const credentials = await Promise.all(
    picked.map((d) =>
      deps.proxies.credentials(d.metadata.name, { incarnation: d.status.instance?.createdAt ?? d.metadata.name }),
    ),
  );
  const entries = picked.flatMap((d, i) => {
    const creds = credentials[i];
    if (!creds || !d.status.address) return [];
    const tls = tlsEndpoint(d);
    return [
      {
        name: d.metadata.name,
        provider: d.spec.provider,
        url: proxyUrl(d.status.address, creds.username, creds.password),
        tlsUrl: tls ? proxyUrl(tls.address, creds.username, creds.password, 'https') : null,
        tlsFingerprint: tls?.fingerprint ?? null,
        egressIp: d.status.health?.egressIp ?? null,
        country: d.status.health?.country ?? null,
        asn: d.status.health?.asn ?? null,
        latencyMs: d.status.health?.latencyMs ?? null,
      },
    ];
  });
  if (q.format === 'urls')
    return {
      status: 200,
      headers: { ...headers, 'content-type': 'text/plain; charset=utf-8' },
      body: entries.map((e) => `${e.url}\n`).join(''),
    };
  return { status: 200, headers, body: entries };
}

async function providers(deps: ApiDeps): Promise<ApiResponse> {
  const known = new Map((await deps.providerStatus.all()).map((s) => [s.name, s]));
  const items = deps.config.providers.map(
    (p) =>
      known.get(p.name) ?? {
        name: p.name,
        type: p.type,
        status: 'Unknown',
        message: 'not checked yet',
        latencyMs: 0,
        lastCheckAt: null,
      },
  );
  return { status: 200, body: { items, egressDatabase: EGRESS_DATABASE } };
}

async function relays(deps: ApiDeps): Promise<ApiResponse> {
  const now = (deps.now ?? Date.now)();
  const ids = [...new Set(deps.config.providers.flatMap((p) => (p.relay ? [p.relay] : [])))];
  const items = [];
  for (const id of ids) {
    const doc = await deps.relays.relay(id);
    const instances = doc ? (await deps.relays.instances(id)).length : 0;
    items.push({
      id,
      heartbeatAt: doc ? new Date(doc.heartbeatAt).toISOString() : null,
      heartbeatAgeSeconds: doc ? Math.round((now - doc.heartbeatAt) / 1000) : null,
      startedAt: doc ? new Date(doc.startedAt).toISOString() : null,
      providers: doc?.providers.map((p) => ({ name: p.name, ok: p.ok, message: p.message })) ?? [],
      instances,
    });
  }
  return { status: 200, body: { items } };
}

/** Answers one route's request; `name` is the decoded `{name}` ('' when the path has none). */
type Handle = (deps: ApiDeps, req: ApiRequest, name: string) => Promise<ApiResponse>;

/** What answers each route of the table (shared/api/routes.ts); the compiler checks that none is missing. */
const HANDLERS: Record<RouteName, Handle> = {
  health: () => Promise.resolve({ status: 200, body: { ok: true } }),
  dashboard: (deps) => Promise.resolve(dashboardPage(deps.dashboardHtml)),
  discovery: (deps, req) => discovery(deps, req.query, req.signal),
  report: (deps, req, name) => postReport(deps, name, callerId(req.headers['authorization']), req.body, req.signal),
  demand: (deps, req, name) => postDemand(deps, name, req.body),
  listProxies: (deps, req) => listProxies(deps, req.query),
  getProxy: (deps, _req, name) => getProxy(deps, name),
  listProviders: (deps) => providers(deps),
  listRelays: (deps) => relays(deps),
  listPools: (deps) => listPools(deps),
  getPool: (deps, _req, name) => getPool(deps, name),
  putProxy: (deps, req, name) => putProxy(deps, name, req.body),
  deleteProxy: (deps, _req, name) => deleteProxy(deps, name),
  putPool: (deps, req, name) => putPool(deps, name, req.body),
  deletePool: (deps, _req, name) => deletePool(deps, name),
};

/** The raw `{name}` segment when `path` fits `template` ('' when it has none); undefined when it does not fit. */
function fit(template: string, path: string): string | undefined {
  const want = template.split('/');
  const got = path.split('/');
  if (want.length !== got.length) return undefined;
  let name = '';
  for (const [i, part] of want.entries()) {
    const segment = got[i] ?? '';
    if (part === '{name}' && segment !== '') name = segment;
    else if (part !== segment) return undefined;
  }
  return name;
}

/** The largest body the API reads: every document it takes is a few kilobytes. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** 413 for a body over MAX_BODY_BYTES, by its declared length or its size as received. */
function refuseLargeBody(req: ApiRequest): void {
  const header = req.headers['content-length'];
  const declared = Number(Array.isArray(header) ? header[0] : (header ?? 0));
  const size = Math.max(Number.isFinite(declared) ? declared : 0, req.bodyBytes ?? 0);
  if (size > MAX_BODY_BYTES)
    throw new ApiError('PayloadTooLarge', `the request body is ${size} bytes; the API takes at most ${MAX_BODY_BYTES}`);
}

/** The scope of the caller's token; 401 when there is no token, or it is not one of the configured ones. */
function authenticate(deps: ApiDeps, req: ApiRequest): ApiScope {
  if (deps.config.apiTokens.length === 0)
    throw new ApiError('Unauthorized', 'no API tokens are configured (apiTokens or EGRESS_API_TOKENS)');
  const scope = tokenScope(req.headers['authorization'], deps.config.apiTokens);
  if (!scope) throw new ApiError('Unauthorized', 'missing or invalid bearer token');
  return scope;
}

async function route(deps: ApiDeps, req: ApiRequest): Promise<ApiResponse> {
  const { method, path } = req;
  refuseLargeBody(req);
  const onPath = ROUTE_LIST.flatMap((r) => {
    const name = fit(r.path, path);
    return name === undefined ? [] : [{ route: r, name }];
  });
  const hit = onPath.find((c) => c.route.method === method);
  if (hit?.route.scope === 'public') return HANDLERS[hit.route.name](deps, req, hit.name);
  // Anything else, a 404 or a 405 included, is answered only to a known token.
  const scope = authenticate(deps, req);
  if (!hit) {
    if (onPath.length === 0) throw new ApiError('NotFound', `no route for ${method} ${path}`);
    const allowed = onPath.map((c) => c.route.method).join(', ');
    throw new ApiError('MethodNotAllowed', `${method} is not allowed on ${path} (allowed: ${allowed})`);
  }
  const needed = hit.route.scope;
  if (!grants(scope, needed))
    throw new ApiError(
      'Forbidden',
      `${method} ${hit.route.path} needs a token with the "${needed}" scope; this token has "${scope}"`,
    );
  return HANDLERS[hit.route.name](deps, req, hit.name === '' ? '' : nameFrom(hit.name));
}

/** Answers one request; never throws. */
export async function handleApi(deps: ApiDeps, req: ApiRequest): Promise<ApiResponse> {
  try {
    return withSafetyHeaders(await route(deps, req));
  } catch (err) {
    return withSafetyHeaders(failure(deps, req, err));
  }
}

/**
 * Headers on every answer: `no-store`, since most carry what a shared cache must not keep
 * (discovery's proxy credentials above all), and `nosniff`, so a browser takes each body as the
 * type it is declared.
 */
function withSafetyHeaders(response: ApiResponse): ApiResponse {
  return {
    ...response,
    headers: { ...response.headers, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' },
  };
}

/** `Retry-After` of a 503 for a busy or unavailable backend: long enough not to feed the contention. */
const BUSY_RETRY_AFTER_SECONDS = 5;

/** The answer for an error a route threw. */
function failure(deps: ApiDeps, req: ApiRequest, err: unknown): ApiResponse {
  if (err instanceof ApiError) return errorAnswer(err);
  if (err instanceof ValidationError) return errorAnswer(new ApiError('Validation', err.message, { field: err.field }));
  if (err instanceof EgressError) return errorAnswer(new ApiError('Unavailable', err.message));
  if (err instanceof CallerGone) {
    deps.logger.info('request abandoned by its caller; its work was stopped', { method: req.method, path: req.path });
    return errorAnswer(new ApiError('Unavailable', err.message));
  }
  const code = grpcCode(err);
  // gRPC UNAVAILABLE / DEADLINE_EXCEEDED from Firestore or Pub/Sub: a dependency is down or a
  // transaction ran past its attempts' deadlines; ABORTED: a transaction lost its attempts to
  // concurrent ones. Trying again later is right, and said so; the contention is logged, never silent.
  if (code === GRPC_CODES.UNAVAILABLE || code === GRPC_CODES.DEADLINE_EXCEEDED || code === GRPC_CODES.ABORTED) {
    deps.logger.warn('api request answered 503: a backing service is unavailable or busy', {
      method: req.method,
      path: req.path,
      code: Object.entries(GRPC_CODES).find(([, c]) => c === code)?.[0],
      error: err,
    });
    return errorAnswer(
      new ApiError('Unavailable', 'a backing service is unavailable or busy; try again', {
        retryAfterSeconds: BUSY_RETRY_AFTER_SECONDS,
      }),
    );
  }
  deps.logger.error('api request failed', { method: req.method, path: req.path, error: err });
  return errorAnswer(new ApiError('Internal', 'internal error'));
}
