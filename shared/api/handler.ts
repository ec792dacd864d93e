/** The HTTP API's routes (docs/api.md): proxies, reports, discovery, providers, relays, the dashboard. */
import type { ProxyDoc } from '../domain/status.js';
import { dnsLabel } from '../domain/names.js';
import { EgressError, ValidationError } from '../errors.js';
import type { ApiDeps } from './deps.js';
import { grpcCode, GRPC_CODES } from '../store/grpc-codes.js';
import { matchesLabels, parseDiscoveryQuery, parseLabelFilters, proxyUrl, selectForDiscovery } from './discovery.js';
import { documentView } from './views.js';
import { deletePool, getPool, listPools, putPool, refuseMemberRequest } from './pools.js';
import { ApiError, authorised, callerId, errorResponse, type ApiRequest, type ApiResponse } from './http.js';
import { postReport } from './reports.js';
import { parsePutBody } from './put-body.js';
import { TOPICS } from '../bus/topics.js';

/** A Proxy as the API shows it: the stored document without its lease and bookkeeping. */
export function proxyView(doc: ProxyDoc) {
  return documentView(doc);
}

/** A proxy name from the path; 400 naming `metadata.name` when it is not a DNS-1123 label. */
function nameFrom(raw: string): string {
  const name = decodeURIComponent(raw);
  const parsed = dnsLabel.safeParse(name);
  if (!parsed.success)
    throw new ApiError('Validation', `metadata.name: ${parsed.error.issues[0]?.message ?? 'invalid'}`, 'metadata.name');
  return name;
}

async function listProxies(deps: ApiDeps, q: URLSearchParams): Promise<ApiResponse> {
  const labels = parseLabelFilters(q.getAll('label'));
  const phase = q.get('phase');
  const provider = q.get('provider');
  const items = (await deps.proxies.list()).filter(
    (d) =>
      (!phase || d.status.phase === phase) && (!provider || d.spec.provider === provider) && matchesLabels(d, labels),
  );
  return { status: 200, body: { items: items.map(proxyView) } };
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
      'spec.provider',
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

async function discovery(deps: ApiDeps, params: URLSearchParams): Promise<ApiResponse> {
  const q = parseDiscoveryQuery(params);
  const picked = selectForDiscovery(await deps.proxies.list(), q, Math.random, (deps.now ?? Date.now)());
  // The credentials are read at once, not one round trip after another: a gateway asks every
  // 2 s with a 5 s timeout, and a slow answer leaves it on a stale list.
  const credentials = await Promise.all(picked.map((d) => deps.proxies.credentials(d.metadata.name)));
  const entries = picked.flatMap((d, i) => {
    const creds = credentials[i];
    if (!creds || !d.status.address) return [];
    return [
      {
        name: d.metadata.name,
        provider: d.spec.provider,
        url: proxyUrl(d.status.address, creds.username, creds.password),
        egressIp: d.status.health?.egressIp ?? null,
        latencyMs: d.status.health?.latencyMs ?? null,
      },
    ];
  });
  if (q.format === 'urls')
    return {
      status: 200,
      headers: { 'content-type': 'text/plain; charset=utf-8' },
      body: entries.map((e) => `${e.url}\n`).join(''),
    };
  return { status: 200, body: entries };
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
  return { status: 200, body: { items } };
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

async function route(deps: ApiDeps, req: ApiRequest): Promise<ApiResponse> {
  const { method, path } = req;
  if (path === '/healthz') return { status: 200, body: { ok: true } };
  if (path === '/' && method === 'GET') {
    return {
      status: 200,
      headers: { 'content-type': 'text/html; charset=utf-8' },
      body:
        deps.dashboardHtml ??
        '<!doctype html><title>egress</title><p>The dashboard was not built: run <code>npm run build</code>.</p>',
    };
  }
  if (!path.startsWith('/v1/')) throw new ApiError('NotFound', `no route for ${method} ${path}`);
  if (deps.config.apiTokens.length === 0)
    throw new ApiError('Unauthorized', 'no API tokens are configured (apiTokens or EGRESS_API_TOKENS)');
  if (!authorised(req.headers['authorization'], deps.config.apiTokens))
    throw new ApiError('Unauthorized', 'missing or invalid bearer token');
  const one = /^\/v1\/proxies\/([^/]+)$/.exec(path);
  const reports = /^\/v1\/proxies\/([^/]+)\/reports$/.exec(path);
  const only = (methods: string[]) => {
    if (!methods.includes(method)) {
      throw new ApiError('MethodNotAllowed', `${method} is not allowed on ${path} (allowed: ${methods.join(', ')})`);
    }
  };
  if (reports?.[1]) {
    only(['POST']);
    return postReport(deps, nameFrom(reports[1]), callerId(req.headers['authorization']), req.body);
  }
  if (one?.[1]) {
    only(['GET', 'PUT', 'DELETE']);
    const name = nameFrom(one[1]);
    if (method === 'GET') return getProxy(deps, name);
    if (method === 'PUT') return putProxy(deps, name, req.body);
    return deleteProxy(deps, name);
  }
  const pool = /^\/v1\/pools\/([^/]+)$/.exec(path);
  if (pool?.[1]) {
    only(['GET', 'PUT', 'DELETE']);
    const name = nameFrom(pool[1]);
    if (method === 'GET') return getPool(deps, name);
    if (method === 'PUT') return putPool(deps, name, req.body);
    return deletePool(deps, name);
  }
  const collections: Record<string, () => Promise<ApiResponse>> = {
    '/v1/proxies': () => listProxies(deps, req.query),
    '/v1/discovery': () => discovery(deps, req.query),
    '/v1/providers': () => providers(deps),
    '/v1/pools': () => listPools(deps),
    '/v1/relays': () => relays(deps),
  };
  const collection = collections[path];
  if (collection) {
    only(['GET']);
    return collection();
  }
  throw new ApiError('NotFound', `no route for ${method} ${path}`);
}

/** Answers one request; never throws. */
export async function handleApi(deps: ApiDeps, req: ApiRequest): Promise<ApiResponse> {
  try {
    return await route(deps, req);
  } catch (err) {
    if (err instanceof ApiError) {
      const response = errorResponse(err.code, err.message, err.field);
      if (err.retryAfterSeconds === undefined) return response;
      return { ...response, headers: { 'retry-after': String(err.retryAfterSeconds) } };
    }
    if (err instanceof ValidationError) return errorResponse('Validation', err.message, err.field);
    if (err instanceof EgressError) return errorResponse('Unavailable', err.message);
    const code = grpcCode(err);
    // gRPC UNAVAILABLE / DEADLINE_EXCEEDED from Firestore or Pub/Sub: a dependency is down; ABORTED:
    // a transaction (a report) lost its retries to concurrent ones. Either way, trying again is right.
    if (code === GRPC_CODES.UNAVAILABLE || code === GRPC_CODES.DEADLINE_EXCEEDED || code === GRPC_CODES.ABORTED)
      return errorResponse('Unavailable', 'a backing service is unavailable or busy; try again');
    deps.logger.error('api request failed', { method: req.method, path: req.path, error: err });
    return errorResponse('Internal', 'internal error');
  }
}
