/** The API's route table under every scope and without one, its safety headers, body cap and path decoding. */
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { startMemoryFleet, type MemoryFleet } from '../../test/support/memory-fleet.js';
import { dashboardPolicy } from './dashboard-page.js';
import { handleApi, MAX_BODY_BYTES } from './handler.js';
import type { ApiRequest } from './http.js';
import { createLogger } from '../logger.js';
import { ROUTE_LIST, type Route } from './routes.js';
import { API_SCOPES, grants, type ApiScope } from './scopes.js';

const TOKENS: Record<ApiScope, string> = {
  discover: 'discover-token-0123456789',
  read: 'read-token-0123456789abc',
  admin: 'admin-token-0123456789ab',
};

let fleet: MemoryFleet;

beforeAll(async () => {
  fleet = await startMemoryFleet({ apiTokens: API_SCOPES.map((s) => `${s}:${TOKENS[s]}`) });
});

function call(
  method: string,
  path: string,
  token?: string,
  extra: Partial<ApiRequest> = {},
): ReturnType<typeof handleApi> {
  return handleApi(
    { ...fleet, now: () => fleet.clock.now() },
    {
      method,
      path,
      query: new URLSearchParams(),
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      body: undefined,
      ...extra,
    },
  );
}

/** A concrete path for a route: `{name}` becomes a valid name of nothing stored. */
const pathOf = (route: Route) => route.path.replace('{name}', 'scope-walk');
const errorOf = (body: unknown) => (body as { error?: { code?: string; message?: string } }).error;
const guarded = ROUTE_LIST.filter((r): r is Route & { scope: ApiScope } => r.scope !== 'public');

describe('every route under every scope', () => {
  it('every route keeps the scope it has: a looser one fails here, not only in review', () => {
    expect(Object.fromEntries(ROUTE_LIST.map((r) => [`${r.method} ${r.path}`, r.scope]))).toEqual({
      'GET /healthz': 'public',
      'GET /': 'public',
      'GET /v1/discovery': 'discover',
      'POST /v1/proxies/{name}/reports': 'discover',
      'POST /v1/pools/{name}/demand': 'discover',
      'GET /v1/proxies': 'read',
      'GET /v1/proxies/{name}': 'read',
      'GET /v1/providers': 'read',
      'GET /v1/relays': 'read',
      'GET /v1/pools': 'read',
      'GET /v1/pools/{name}': 'read',
      'PUT /v1/proxies/{name}': 'admin',
      'DELETE /v1/proxies/{name}': 'admin',
      'PUT /v1/pools/{name}': 'admin',
      'DELETE /v1/pools/{name}': 'admin',
    });
  });

  it('the table has public and guarded routes, each with a scope', () => {
    expect(ROUTE_LIST.filter((r) => r.scope === 'public').map((r) => r.path)).toEqual(['/healthz', '/']);
    for (const scope of API_SCOPES) expect(guarded.some((r) => r.scope === scope)).toBe(true);
  });

  it.each(guarded.flatMap((route) => API_SCOPES.map((held) => ({ route, held }))))(
    '$route.method $route.path with a $held token',
    async ({ route, held }) => {
      const answer = await call(route.method, pathOf(route), TOKENS[held]);
      if (grants(held, route.scope)) {
        // Reached the route itself: whatever it answers (404 for a name nothing has, 400 for no body), not a refusal.
        expect([401, 403, 405], JSON.stringify(answer.body)).not.toContain(answer.status);
        expect(errorOf(answer.body)?.message ?? '').not.toMatch(/^no route/);
      } else {
        expect(answer.status).toBe(403);
        expect(errorOf(answer.body)).toEqual({
          code: 'Forbidden',
          message: `${route.method} ${route.path} needs a token with the "${route.scope}" scope; this token has "${held}"`,
        });
      }
    },
  );

  it.each(guarded)('$method $path without a token, or with an unknown one: 401', async (route) => {
    for (const token of [undefined, 'unknown-token-0123456789', `${TOKENS.admin}x`]) {
      const answer = await call(route.method, pathOf(route), token);
      expect(answer.status).toBe(401);
      expect(errorOf(answer.body)?.code).toBe('Unauthorized');
    }
  });

  it('public routes answer without a token', async () => {
    for (const route of ROUTE_LIST.filter((r) => r.scope === 'public'))
      expect((await call(route.method, route.path)).status).toBe(200);
  });

  it('an unknown path or method is told only to a known token', async () => {
    expect((await call('GET', '/v1/nothing')).status).toBe(401);
    expect((await call('GET', '/v1/nothing', TOKENS.discover)).status).toBe(404);
    expect((await call('PATCH', '/v1/proxies/x', TOKENS.discover)).status).toBe(405);
  });

  it('docs/api.md gives every route its scope', () => {
    const doc = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    // A row of the route table: `| \`GET /v1/discovery?…\` | \`discover\` | answer |`.
    const scopes = new Map(
      doc.split('\n').flatMap((line) => {
        const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
        const route = /^`([A-Z]+ [^`?]+)(\?[^`]*)?`$/.exec(cells[1] ?? '')?.[1];
        return route ? [[route, cells[2]] as const] : [];
      }),
    );
    for (const route of ROUTE_LIST)
      expect(scopes.get(`${route.method} ${route.path}`), `${route.method} ${route.path}`).toBe(`\`${route.scope}\``);
  });
});

describe('safety of every answer', () => {
  it('no-store and nosniff on answers, refusals included; discovery carries credentials', async () => {
    for (const [path, token] of [
      ['/v1/discovery', TOKENS.discover],
      ['/v1/discovery', undefined],
      ['/v1/proxies', TOKENS.discover],
      ['/healthz', undefined],
    ] as const) {
      const answer = await call('GET', path, token);
      expect(answer.headers).toMatchObject({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
    }
  });

  it('the dashboard page may run only its own inline script and styles, and no site may frame it', async () => {
    const html = '<html><head><style>b{}</style><style>i{}</style></head><body><script>go()</script></body></html>';
    const sha = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;
    const policy = dashboardPolicy(html);
    expect(policy).toContain(`script-src ${sha('go()')};`);
    expect(policy).toContain(`style-src ${sha('b{}')} ${sha('i{}')};`);
    expect(policy).toContain("default-src 'none'");
    expect(policy).toContain("frame-ancestors 'none'");
    const page = await handleApi(
      { ...fleet, dashboardHtml: html },
      { method: 'GET', path: '/', query: new URLSearchParams(), headers: {}, body: undefined },
    );
    expect(page.headers).toMatchObject({
      'content-security-policy': policy,
      'x-frame-options': 'DENY',
      'x-content-type-options': 'nosniff',
    });
    expect(dashboardPolicy('<p>no script</p>')).toContain("script-src 'none'");
  });

  it('a body over the cap is refused with 413 before the token is looked at', async () => {
    const big = String(MAX_BODY_BYTES + 1);
    for (const extra of [{ headers: { 'content-length': big } }, { bodyBytes: MAX_BODY_BYTES + 1 }]) {
      const answer = await call('POST', '/v1/proxies/scope-walk/reports', undefined, extra);
      expect(answer.status).toBe(413);
      expect(errorOf(answer.body)).toEqual({
        code: 'PayloadTooLarge',
        message: `the request body is ${MAX_BODY_BYTES + 1} bytes; the API takes at most ${MAX_BODY_BYTES}`,
      });
    }
    const atCap = await call('POST', '/v1/proxies/scope-walk/reports', TOKENS.discover, { bodyBytes: MAX_BODY_BYTES });
    expect(atCap.status).not.toBe(413);
  });

  it('a malformed percent-encoding in a name is a 400 naming metadata.name', async () => {
    for (const path of ['/v1/proxies/%E0%A4%A', '/v1/pools/%zz', '/v1/proxies/%/reports']) {
      const method = path.endsWith('reports') ? 'POST' : 'GET';
      const answer = await call(method, path, TOKENS.admin);
      expect(answer.status, path).toBe(400);
      expect(errorOf(answer.body)).toMatchObject({ code: 'Validation', field: 'metadata.name' });
    }
  });
});

describe('a busy store', () => {
  it('a report whose transaction lost to contention is a logged 503 with Retry-After, not a silent one', async () => {
    const lines: { message: string; code?: string; path?: string }[] = [];
    const aborted = Object.assign(new Error('10 ABORTED: Transaction lock timeout'), { code: 10 });
    const answer = await handleApi(
      {
        ...fleet,
        now: () => fleet.clock.now(),
        logger: createLogger({ write: (line) => lines.push(JSON.parse(line) as (typeof lines)[number]) }),
        reports: { record: () => Promise.reject(aborted) },
      },
      {
        method: 'POST',
        path: '/v1/proxies/scope-walk/reports',
        query: new URLSearchParams(),
        headers: { authorization: `Bearer ${TOKENS.discover}` },
        body: { reason: 'error' },
      },
    );
    expect(answer.status).toBe(503);
    expect(answer.headers?.['retry-after']).toMatch(/^\d+$/);
    expect(lines).toContainEqual(expect.objectContaining({ code: 'ABORTED', path: '/v1/proxies/scope-walk/reports' }));
  });
});
