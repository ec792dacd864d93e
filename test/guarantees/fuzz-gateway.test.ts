/**
 * Bad input at the gateway: seeded damage to a valid proxied request and to a valid CONNECT (the
 * request line, the URI, the version, the headers, the body framing, the gateway's credentials,
 * the tunnel's authority), sent as raw bytes to a real gateway in front of real `proxy` servers.
 * Each gets an HTTP answer with a fitting 4xx status and a reason (never a silent close); none
 * reaches a fleet proxy or the target, none is reported against a proxy, and the gateway still
 * serves afterwards.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../../gateway/server.js';
import {
  createMemoryFleetApi,
  startTestProxy,
  startTestTarget,
  type MemoryFleetApi,
  type TestProxy,
  type TestTarget,
} from '../../gateway/testing.js';
import { Figures } from './support/figures.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed, type Rng } from './support/prng.js';

const FILE = 'test/guarantees/fuzz-gateway.test.ts';
const SEED = suiteSeed(0x0f022004);
const COUNT = scenarioCount(300, 3000);
const figures = new Figures('fuzz-gateway', SEED);
let proxies: TestProxy[];
let target: TestTarget;
let fleet: MemoryFleetApi;
let gw: Gateway;

/** One damaged input: the bytes sent and the statuses a correct gateway may answer. */
interface Case {
  class: string;
  label: string;
  raw: string;
  want: number[];
}

const basic = (userPass: string) => `Basic ${Buffer.from(userPass, 'utf8').toString('base64')}`;

/** Everything the gateway answers on a fresh connection to `raw`, until it closes (or 5 s pass). */
function exchange(raw: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let out = '';
    const s = net.connect(gw.address.port, '127.0.0.1', () => s.write(raw, 'latin1'));
    const timer = setTimeout(() => {
      s.destroy();
      resolve(out);
    }, 5000);
    s.on('data', (c: Buffer) => {
      out += c.toString('latin1');
      // One complete answer is enough: the gateway may keep the connection open after a 4xx.
      if (/\r\n\r\n/.test(out) && /content-length: (\d+)/i.test(out)) {
        const length = Number(/content-length: (\d+)/i.exec(out)?.[1]);
        if (out.length - out.indexOf('\r\n\r\n') - 4 >= length) {
          clearTimeout(timer);
          s.destroy();
          resolve(out);
        }
      }
    });
    s.once('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.once('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? resolve(out) : reject(err)));
  });
}

/** The cases: one part of a valid request or CONNECT broken at a time, in proportions fixed by the seed. */
function cases(rng: Rng, count: number): Case[] {
  const auth = basic(`${gw.credentials.username}:${gw.credentials.password}`);
  const url = `${target.url}page`;
  const host = new URL(target.url).host;
  const request = (o: { line?: string; headers?: string[]; auth?: string | null; body?: string }) =>
    [
      o.line ?? `GET ${url} HTTP/1.1`,
      `Host: ${host}`,
      ...(o.auth === null ? [] : [`Proxy-Authorization: ${o.auth ?? auth}`]),
      ...(o.headers ?? []),
      '',
      o.body ?? '',
    ].join('\r\n');
  const connect = (authority: string, a: string | null = auth) =>
    [
      `CONNECT ${authority} HTTP/1.1`,
      `Host: ${authority}`,
      ...(a === null ? [] : [`Proxy-Authorization: ${a}`]),
      '',
      '',
    ].join('\r\n');
  const makers: Record<string, () => Omit<Case, 'class'>> = {
    method: () => {
      const m = rng.pick(['G ET', 'GET\u0000', 'GËT', '(', 'X'.repeat(rng.int(20, 3000)), 'GET\tX', '']);
      return { label: JSON.stringify(m.slice(0, 20)), raw: request({ line: `${m} ${url} HTTP/1.1` }), want: [400] };
    },
    uri: () => {
      const u = rng.pick([
        '/page',
        'page',
        '*',
        'http://',
        'http://[::1/',
        `http://127.0.0.1:${rng.int(65536, 999999)}/`,
        'ftp://127.0.0.1/x',
        'file:///etc/passwd',
        'javascript:alert(1)',
        'data:,x',
        `http://127.0.0.1:${new URL(target.url).port}/a b`,
        'http://%zz/',
        'https://127.0.0.1/',
      ]);
      return { label: JSON.stringify(u), raw: request({ line: `GET ${u} HTTP/1.1` }), want: [400] };
    },
    version: () => {
      const v = rng.pick(['HTTP/9.9', 'HTTP/1', 'http/1.1', 'HTTP/1.1 extra', 'HTTP/1.1x', 'HTCPCP/1.0', '']);
      return { label: JSON.stringify(v), raw: request({ line: `GET ${url} ${v}`.trimEnd() }), want: [400, 505] };
    },
    header: () => {
      const h = rng.pick([
        'NoColon',
        'Bad Name: x',
        ' Folded: x',
        'X-Nul: a\u0000b',
        `X-Big: ${'a'.repeat(rng.int(17_000, 90_000))}`,
        'Content-Length: -1',
        'Content-Length: 1\r\nContent-Length: 2',
        'Content-Length: 12abc',
        'Transfer-Encoding: chunked\r\nContent-Length: 3',
        'Transfer-Encoding: gzip, chunked, identity',
      ]);
      const big = h.startsWith('X-Big');
      return {
        label: big ? `X-Big of ${h.length} bytes` : JSON.stringify(h),
        raw: request({ headers: [h] }),
        want: big ? [431] : [400],
      };
    },
    chunks: () => {
      const b = rng.pick([
        'zz\r\nabc\r\n0\r\n\r\n',
        '3\r\nabcdef\r\n0\r\n\r\n',
        '-1\r\n\r\n',
        `${'f'.repeat(20)}\r\nx\r\n`,
      ]);
      return {
        label: JSON.stringify(b.slice(0, 24)),
        raw: request({ line: `POST ${url} HTTP/1.1`, headers: ['Transfer-Encoding: chunked'], body: b }),
        want: [400],
      };
    },
    credentials: () => {
      const a = rng.pick<string | null>([
        null,
        'Bearer x',
        'Basic !!!notbase64',
        basic('no-colon'),
        basic(`${gw.credentials.username}:wrong`),
        basic(`${gw.credentials.username}-session-bad!id:${gw.credentials.password}`),
        basic(`${gw.credentials.username}-session-${'s'.repeat(65)}:${gw.credentials.password}`),
        basic(`:${gw.credentials.password}`),
        `Basic ${Buffer.from(`${gw.credentials.username}:${gw.credentials.password}`).toString('hex')}`,
        `Digest username="${gw.credentials.username}"`,
      ]);
      const tunnel = rng.chance(0.3);
      return {
        label: `${tunnel ? 'CONNECT' : 'GET'} with ${JSON.stringify(a)?.slice(0, 40)}`,
        raw: tunnel ? connect(`${host}`, a) : request({ auth: a }),
        want: [407],
      };
    },
    authority: () => {
      const port = new URL(target.url).port;
      const t = rng.pick([
        '127.0.0.1',
        '127.0.0.1:0',
        `127.0.0.1:${rng.int(65536, 99999)}`,
        `:${port}`,
        `127.0.0.1:${port}/x`,
        `user@127.0.0.1:${port}`,
        `[::1:${port}`,
        `127.0.0.1:${port}:1`,
        `127.0.0.1:-${port}`,
        `127.0.0.1:0x50`,
        `http://127.0.0.1:${port}`,
      ]);
      return { label: JSON.stringify(t), raw: connect(t), want: [400] };
    },
  };
  const classes = Object.keys(makers);
  return Array.from({ length: count }, () => {
    const cls = rng.pick(classes);
    return { class: cls, ...(makers[cls] as () => Omit<Case, 'class'>)() };
  });
}

beforeAll(async () => {
  proxies = await Promise.all(['f1', 'f2'].map((n, i) => startTestProxy(n, `127.0.0.${i + 2}`)));
  target = await startTestTarget();
  fleet = createMemoryFleetApi(proxies.map((p) => p.upstream));
  gw = await startGateway({ fleet: fleet.api, listen: { host: '127.0.0.1', port: 0 }, refreshMs: 100 });
});

afterAll(async () => {
  figures.report();
  await gw?.close();
  await Promise.all([...(proxies ?? []).map((p) => p.close()), target?.close()]);
});

describe('guarantee: bad input at the gateway', () => {
  it(`${COUNT} seeded bad requests and tunnels each get a 4xx with a reason, and reach nothing`, async () => {
    const failures: string[] = [];
    for (const c of cases(mulberry32(SEED), COUNT)) {
      const answer = await exchange(c.raw);
      figures.add(`class.${c.class}`);
      figures.add('inputs');
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(answer)?.[1]);
      const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
      const wrong: string[] = [];
      if (!status) wrong.push(`no HTTP answer (${JSON.stringify(answer.slice(0, 60))})`);
      else if (!c.want.includes(status)) wrong.push(`status ${status}, want ${c.want.join(' or ')}`);
      if (status && body.trim().length < 10) wrong.push('no reason in the body');
      if (wrong.length > 0)
        failures.push(`${c.class} ${c.label}: ${wrong.join('; ')} ${JSON.stringify(body.slice(0, 100))}`);
      else figures.add('refusedWithReason');
    }
    expect(failures, [...failures.slice(0, 10), replayHint(FILE, SEED, COUNT)].join('\n')).toEqual([]);
  }, 120_000);

  it('afterwards: no fleet proxy and no target saw any of it, nothing was reported, and the gateway serves', async () => {
    expect(proxies.flatMap((p) => p.authorizations)).toEqual([]);
    expect(target.seen).toEqual([]);
    expect(fleet.reports).toEqual([]);
    const auth = basic(`${gw.credentials.username}:${gw.credentials.password}`);
    const answer = await exchange(
      `GET ${target.url}ok HTTP/1.1\r\nHost: ${new URL(target.url).host}\r\nProxy-Authorization: ${auth}\r\nConnection: close\r\n\r\n`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(target.seen).toHaveLength(1);
    figures.add('servedAfterwards');
  });
});
