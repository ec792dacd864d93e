/** The shared client against the real handler on HTTP (test/support/api-server.ts): every route of the table reached, answers checked, errors as ApiError. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiServer, type ApiServer } from '../../test/support/api-server.js';
import { startMemoryFleet, type MemoryFleet } from '../../test/support/memory-fleet.js';
import { ApiError } from './api-error.js';
import { createRouteClient, type RouteClient, type RouteInput } from './client.js';
import { ROUTE_LIST, type RouteName } from './routes.js';
import * as answers from './schema.js';

const ADMIN = 'admin-token-for-the-client';
const DISCOVER = 'discover-token-for-the-client';

let fleet: MemoryFleet;
let api: ApiServer;
let client: RouteClient;

beforeAll(async () => {
  fleet = await startMemoryFleet({ apiTokens: [`admin:${ADMIN}`, `discover:${DISCOVER}`] });
  api = await startApiServer(fleet);
  client = createRouteClient({ baseUrl: api.url, token: ADMIN, answers });
});
afterAll(() => api.close());

/** The error a call failed with (an ApiError, or whatever else it threw). */
async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (err) {
    return err;
  }
  throw new Error('the call succeeded');
}

/** A local HTTP server answering every request with `answer`, for what the real API never says. */
async function answering(answer: (req: http.IncomingMessage, res: http.ServerResponse) => void) {
  const server = http.createServer(answer);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}

describe('the client and the server follow one table', () => {
  /** Each route's input: a name nothing has, and a body of the right shape where it takes one. */
  const inputs: { [K in RouteName]: RouteInput<K> | undefined } = {
    health: undefined,
    dashboard: undefined,
    discovery: { query: { format: 'json' } },
    report: { name: 'nothing-here', body: { reason: 'error' } },
    demand: {
      name: 'nothing-here',
      body: { gateway: 'gw', sequence: 1, inFlight: 0, startedPerSecond: 0, waiting: 0 },
    },
    listProxies: {},
    getProxy: { name: 'nothing-here' },
    listProviders: undefined,
    listRelays: undefined,
    listPools: undefined,
    getPool: { name: 'nothing-here' },
    putProxy: { name: 'nothing-here', body: { apiVersion: 'egress.dev/v1', kind: 'Proxy', spec: { provider: 'x' } } },
    deleteProxy: { name: 'nothing-here' },
    putPool: { name: 'nothing-here', body: {} },
    deletePool: { name: 'nothing-here' },
  };

  it.each(ROUTE_LIST)('$name: $method $path reaches its route', async (route) => {
    const seen = api.requests.length;
    // `as never`: the table's entries, each with its own input type, walked as one list.
    const err = await client.send(route.name, inputs[route.name] as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    const asked = api.requests[seen];
    expect(asked?.method).toBe(route.method);
    expect(asked?.url.split('?')[0]).toBe(route.path.replace('{name}', 'nothing-here'));
    // Whatever the route answers (200, or 404 for a name nothing has, 400 for a body it refuses),
    // it is the route's own answer, not the router's.
    if (err instanceof ApiError) {
      expect(err.code).not.toBe('MethodNotAllowed');
      expect(err.message).not.toMatch(/^no route/);
      expect([401, 403]).not.toContain(err.status);
    }
  });
});

describe('answers', () => {
  it('parses each answer with its route’s schema, and every page of a paged route', async () => {
    for (const name of ['pg-1', 'pg-2', 'pg-3'])
      await client.call('putProxy', {
        name,
        body: { apiVersion: 'egress.dev/v1', kind: 'Proxy', spec: { provider: 'local' } },
      });
    await fleet.bus.deliver();
    expect(await client.call('health')).toEqual({ ok: true });
    const proxy = await client.call('getProxy', { name: 'pg-1' });
    expect(proxy.metadata.name).toBe('pg-1');
    expect(proxy.status.conditions).toBeInstanceOf(Array);
    const pages = await client.every('listProxies', { query: { limit: 1 } });
    // One proxy a page (the route walk above may have left one more), and the empty page that ends them.
    expect(pages.map((p) => p.metadata.name).filter((n) => n.startsWith('pg-'))).toEqual(['pg-1', 'pg-2', 'pg-3']);
    expect(api.requests.filter((r) => r.url.startsWith('/v1/proxies?limit=1'))).toHaveLength(pages.length + 1);
    expect(await client.every('listProxies', { query: { limit: 1 } }, { limit: 2 })).toHaveLength(2);
  });

  it('an answer its schema refuses is BadResponse naming where; without the schemas it is typed, not checked', async () => {
    const odd = await answering((_req, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"items": [{}]}'),
    );
    try {
      const err = await failure(() => createRouteClient({ baseUrl: odd.url, answers }).call('listPools'));
      expect(err).toMatchObject({ code: 'BadResponse', status: 200 });
      expect(String(err)).toMatch(/unexpected answer to GET \/v1\/pools at items\.0\.apiVersion/);
      expect(await createRouteClient({ baseUrl: odd.url }).call('listPools')).toEqual({ items: [{}] });
    } finally {
      await odd.close();
    }
  });
});

describe('errors: one class, from the API’s body', () => {
  it('the API’s code, message, field and status', async () => {
    const err = await failure(() =>
      client.call('putProxy', {
        name: 'bad-1',
        body: { apiVersion: 'egress.dev/v1', kind: 'Proxy', spec: { provider: 7 } },
      }),
    );
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ code: 'Validation', status: 400, field: 'spec.provider', transient: false });
  });

  it('a scope too small is Forbidden; no token says to set one', async () => {
    const forbidden = await failure(() => createRouteClient({ baseUrl: api.url, token: DISCOVER }).call('listPools'));
    expect(forbidden).toMatchObject({ code: 'Forbidden', status: 403 });
    const none = await failure(() => createRouteClient({ baseUrl: api.url }).call('listPools'));
    expect(none).toMatchObject({ code: 'Unauthorized', status: 401 });
    expect((none as Error).message).toBe('missing or invalid bearer token (no token: set EGRESS_TOKEN)');
  });

  it('Retry-After is kept; a body that is not the API’s error is BadResponse', async () => {
    const busy = await answering((req, res) =>
      req.url?.startsWith('/healthz')
        ? res.writeHead(502).end('<html>bad gateway</html>')
        : res
            .writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' })
            .end('{"error":{"code":"TooManyRequests","message":"slow down"}}'),
    );
    try {
      const c = createRouteClient({ baseUrl: busy.url });
      expect(await failure(() => c.call('listPools'))).toMatchObject({ code: 'TooManyRequests', retryAfterSeconds: 7 });
      const bad = await failure(() => c.call('health'));
      expect(bad).toMatchObject({ code: 'BadResponse', status: 502, transient: true });
      expect((bad as Error).message).toBe('HTTP 502 from GET /healthz: <html>bad gateway</html>');
    } finally {
      await busy.close();
    }
  });

  it('no answer is Network (transient); a timeout too; the caller’s own abort is rethrown as it is', async () => {
    const down = await failure(() => createRouteClient({ baseUrl: 'http://127.0.0.1:1' }).call('health'));
    expect(down).toMatchObject({ code: 'Network', status: 0, transient: true });
    expect((down as Error).message).toMatch(/^cannot reach the API at http:\/\/127\.0\.0\.1:1: /);
    const silent = await answering(() => undefined);
    try {
      const slow = await failure(() => createRouteClient({ baseUrl: silent.url, timeoutMs: 100 }).call('health'));
      expect(slow).toMatchObject({ code: 'Network' });
      const stop = new AbortController();
      const pending = failure(() => createRouteClient({ baseUrl: silent.url, signal: stop.signal }).call('health'));
      stop.abort();
      const aborted = await pending;
      expect(aborted).not.toBeInstanceOf(ApiError);
      expect(aborted).toMatchObject({ name: 'AbortError' });
    } finally {
      await silent.close();
    }
  });

  it('a base URL with a path keeps it; a name is percent-encoded into its segment', async () => {
    const seen: string[] = [];
    const front = await answering((req, res) => {
      seen.push(req.url ?? '');
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"accepted":true,"name":"x","messageId":"1"}');
    });
    try {
      await createRouteClient({ baseUrl: `${front.url}/api` }).call('deleteProxy', { name: 'a b/c' });
      await createRouteClient({ baseUrl: `${front.url}/api/` }).call('listPools');
      expect(seen).toEqual(['/api/v1/proxies/a%20b%2Fc', '/api/v1/pools']);
    } finally {
      await front.close();
    }
  });
});
