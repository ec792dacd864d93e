/** The gateway's API client against a real local HTTP server: the discovery query, the report body, errors. */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createFleetApi, upstreamOf } from './fleet-api.js';

const seen: { method: string; url: string; auth: string | undefined; body: string }[] = [];
let answer: { status: number; body: string } = { status: 200, body: '[]' };
/** Answers by the request's `cursor` when set (discovery's pages), else `answer`. */
let pages: Map<string, { body: string; next?: string }> | undefined;
let server: http.Server;
let base = '';

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization, body });
      const page = pages?.get(new URL(req.url ?? '', 'http://x').searchParams.get('cursor') ?? '');
      if (page)
        res
          .writeHead(200, { 'content-type': 'application/json', ...(page.next ? { 'x-next-cursor': page.next } : {}) })
          .end(page.body);
      else res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

describe('fleet API client', () => {
  it('asks discovery once with the filters and the domain, and reads the entries', async () => {
    answer = {
      status: 200,
      body: JSON.stringify([
        { name: 'p1', provider: 'local', url: 'http://u%40x:p%3Aw@10.0.0.1:3128', egressIp: '1.2.3.4' },
      ]),
    };
    const api = createFleetApi({ apiUrl: base, token: 't0k' });
    const list = await api.discover({ pool: 'crawl', provider: 'local', labels: ['a=1', 'b=2'] }, 'shop.example');
    const last = seen.at(-1);
    expect(last?.auth).toBe('Bearer t0k');
    const q = new URL(last?.url ?? '', 'http://x').searchParams;
    expect(Object.fromEntries(q)).toMatchObject({
      format: 'json',
      pool: 'crawl',
      provider: 'local',
      for: 'shop.example',
    });
    expect(q.getAll('label')).toEqual(['a=1', 'b=2']);
    expect(list).toEqual([
      {
        name: 'p1',
        provider: 'local',
        host: '10.0.0.1',
        port: 3128,
        authorization: `Basic ${Buffer.from('u@x:p:w').toString('base64')}`,
        egressIp: '1.2.3.4',
      },
    ]);
  });

  it('follows discovery’s pages by X-Next-Cursor, the filters kept, until a page without one', async () => {
    const entry = (name: string) => ({ name, provider: 'local', url: `http://u:p@10.0.0.1:3128`, egressIp: null });
    pages = new Map([
      ['', { body: JSON.stringify([entry('a')]), next: 'c1' }],
      ['c1', { body: '[]', next: 'c2' }],
      ['c2', { body: JSON.stringify([entry('b')]) }],
    ]);
    const before = seen.length;
    const list = await createFleetApi({ apiUrl: base })
      .discover({ pool: 'crawl' })
      .finally(() => (pages = undefined));
    expect(list.map((u) => u.name)).toEqual(['a', 'b']);
    const asked = seen.slice(before).map((r) => new URL(r.url, 'http://x').searchParams);
    expect(asked.map((q) => q.get('cursor'))).toEqual([null, 'c1', 'c2']);
    expect(asked.every((q) => q.get('pool') === 'crawl')).toBe(true);
  });

  it('posts a report to /v1/proxies/{name}/reports', async () => {
    answer = { status: 202, body: '{"accepted":true}' };
    await createFleetApi({ apiUrl: base }).report('p1', {
      reason: 'banned',
      target: 'shop.example',
      detail: 'HTTP 403',
    });
    expect(seen.at(-1)).toMatchObject({ method: 'POST', url: '/v1/proxies/p1/reports' });
    expect(JSON.parse(seen.at(-1)?.body ?? '')).toEqual({
      reason: 'banned',
      target: 'shop.example',
      detail: 'HTTP 403',
    });
  });

  it('says what is wrong with an error answer, a bad entry, or no API', async () => {
    answer = { status: 401, body: '{"error":{"code":"Unauthorized","message":"no token"}}' };
    await expect(createFleetApi({ apiUrl: base }).discover({})).rejects.toMatchObject({
      name: 'ApiError',
      code: 'Unauthorized',
      status: 401,
      message: 'no token (no token: set EGRESS_TOKEN)',
    });
    answer = { status: 200, body: '[{"name":"x","provider":"p","url":"ftp://h:1"}]' };
    await expect(createFleetApi({ apiUrl: base }).discover({})).rejects.toThrow(
      /unexpected answer to GET \/v1\/discovery at 0.url/,
    );
    await expect(createFleetApi({ apiUrl: 'http://127.0.0.1:1' }).discover({})).rejects.toThrow(/cannot reach the API/);
  });

  it('follows no redirect: another host never sees the request or its headers', async () => {
    const elsewhere: string[] = [];
    const other = http.createServer((req, res) => {
      elsewhere.push(String(req.headers['x-serverless-authorization'] ?? req.url));
      res.writeHead(200, { 'content-type': 'application/json' }).end('[]');
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', () => r()));
    const target = `http://127.0.0.1:${(other.address() as AddressInfo).port}/v1/discovery`;
    const redirecting = http.createServer((_req, res) => res.writeHead(302, { location: target }).end());
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', () => r()));
    try {
      const api = createFleetApi({
        apiUrl: `http://127.0.0.1:${(redirecting.address() as AddressInfo).port}`,
        token: 't0k',
        auth: {
          headers: () => Promise.resolve({ 'x-serverless-authorization': 'Bearer id-token' }),
          refusal: () => undefined,
        },
      });
      await expect(api.discover({ labels: [] })).rejects.toThrow();
      expect(elsewhere).toEqual([]);
    } finally {
      await Promise.all([other, redirecting].map((s) => new Promise<void>((r) => s.close(() => r()))));
    }
  });

  it('parses IPv6 proxy URLs', () => {
    expect(upstreamOf({ name: 'v6', provider: 'p', url: 'http://a:b@[::1]:8080' })).toMatchObject({
      host: '::1',
      port: 8080,
    });
  });

  it('dials the TLS listener, pinned, when the entry has one, and the plain one otherwise', () => {
    const fingerprint = 'c'.repeat(64);
    const entry = { name: 's', provider: 'p', url: 'http://a:b@10.0.0.5:3128' };
    const secure = { ...entry, tlsUrl: 'https://a:b@203.0.113.9:3129', tlsFingerprint: fingerprint };
    expect(upstreamOf(secure)).toMatchObject({ host: '203.0.113.9', port: 3129, tls: { fingerprint } });
    expect(upstreamOf(secure).authorization).toBe(`Basic ${Buffer.from('a:b').toString('base64')}`);
    // A URL without the fingerprint to pin is not trusted: the plain listener it is.
    expect(upstreamOf({ ...secure, tlsFingerprint: null })).toMatchObject({ host: '10.0.0.5', port: 3128 });
    expect(upstreamOf({ ...secure, tlsFingerprint: null }).tls).toBeUndefined();
  });
});
