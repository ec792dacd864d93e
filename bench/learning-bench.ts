/**
 * The gateway that learns, measured: a world where a target bans a third of the fleet's proxies
 * by source address (each proxy dials from its own 127.x address, and the target answers 403 to
 * the banned ones), first-attempt success of round-robin against the learning gateway; and A/B
 * rounds of the plain path with and without the learning and the username grammar.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { Cleanup } from './cleanup.js';
import { startGateway, type Gateway, type GatewayOptions } from '../gateway/server.js';
import { createMemoryFleetApi, startTestProxy, type TestProxy } from '../gateway/testing.js';
import { median } from './stats.js';

/** Fleet proxies in the world, and how many of them the target bans (a third). */
const PROXIES = 6;
const BANNED = 2;
/** The request counts at which first-attempt success is read (the issue's). */
export const MARKS = [200, 1000, 5000] as const;
/** First-attempt success at a mark: over the requests just before it. */
export const WINDOW = 100;
/** Requests in flight at once. */
const CONCURRENCY = 4;
/** A/B: rounds of this long, this many of each variant, in rotating order (short and many: the shared machine's load drifts within seconds). */
const AB_ROUND_MS = 500;
const AB_ROUNDS = 30;

export interface LearningResults {
  /** Per policy: first-attempt success over the WINDOW requests before each mark (0–1), and overall. */
  firstAttempt: Record<Policy, { atMarks: number[]; overall: number }>;
  /** Requests per second of the plain path (medians of alternating rounds), and the medians of the per-round ratios to round-robin. */
  ab: { roundRobinRps: number; learningRps: number; grammarRps: number; learningRatio: number; grammarRatio: number };
}

type Policy = 'round-robin' | 'round-robin-ban-on' | 'learning';

/** A target that bans some source addresses and records, per request id, the status of its first attempt. */
async function startBanningTarget(banned: ReadonlySet<string>) {
  const first = new Map<string, number>();
  const server = http.createServer({ keepAliveTimeout: 60_000 }, (req, res) => {
    const ip = (req.socket.remoteAddress ?? '').replace(/^::ffff:/, '');
    const status = banned.has(ip) ? 403 : 200;
    const id = String(req.headers['x-request-id'] ?? '');
    if (!first.has(id)) first.set(id, status);
    res.writeHead(status, { 'content-type': 'text/plain', 'content-length': '3' }).end('ok\n');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`,
    first,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** GETs `url` through the gateway as `user` with a request id; resolves with the status. */
function get(gw: Gateway, agent: http.Agent, url: string, user: string, id: string): Promise<number> {
  const authorization = `Basic ${Buffer.from(`${user}:${gw.credentials.password}`).toString('base64')}`;
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: '127.0.0.1',
        port: gw.address.port,
        path: url,
        agent,
        headers: { 'proxy-authorization': authorization, 'x-request-id': id },
      },
      (res) => res.resume().once('end', () => resolve(res.statusCode ?? 0)),
    );
    req.once('error', reject).end();
  });
}

/** Sends `count` requests, CONCURRENCY at a time, ids 0…count-1 in order of sending. */
async function drive(gw: Gateway, url: string, count: number, prefix: string): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const id = next++;
        await get(gw, agent, url, gw.credentials.username, `${prefix}${id}`);
      }
    }),
  );
  agent.destroy();
}

function gatewayOver(proxies: TestProxy[], policy: Policy): Promise<Gateway> {
  const options: GatewayOptions = {
    fleet: createMemoryFleetApi(proxies.map((p) => p.upstream)).api,
    listen: { host: '127.0.0.1', port: 0 },
    refreshMs: 60_000,
    banOn: policy === 'round-robin' ? [] : [403],
    ...(policy !== 'learning' && { learning: false }),
  };
  return startGateway(options);
}

/** Requests per second of plain GETs as `user` for `ms`. */
async function rate(gw: Gateway, url: string, user: string, ms: number): Promise<number> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const end = performance.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        await get(gw, agent, url, user, 'ab');
        done++;
      }
    }),
  );
  agent.destroy();
  return done / (ms / 1000);
}

/**
 * @param opts.log - progress lines
 */
export async function runLearningBench(opts: { log: (m: string) => void }, cleanup: Cleanup): Promise<LearningResults> {
  const proxies = await Promise.all(
    Array.from({ length: PROXIES }, (_, i) => startTestProxy(`learn-${i + 1}`, `127.0.0.${i + 2}`)),
  );
  const stopProxies = cleanup.add(() => Promise.all(proxies.map((p) => p.close())).then(() => undefined));
  const banned = new Set(proxies.slice(0, BANNED).map((p) => p.upstream.egressIp ?? ''));
  const target = await startBanningTarget(banned);
  const stopTarget = cleanup.add(() => target.close());
  try {
    const firstAttempt = {} as LearningResults['firstAttempt'];
    const total = MARKS[MARKS.length - 1] ?? 0;
    for (const policy of ['round-robin', 'round-robin-ban-on', 'learning'] as const) {
      opts.log(`learning: ${total} requests, ${BANNED} of ${PROXIES} proxies banned by the target, ${policy}`);
      const gw = await gatewayOver(proxies, policy);
      try {
        await drive(gw, target.url, total, `${policy}:`);
      } finally {
        await gw.close();
      }
      const ok = (id: number) => target.first.get(`${policy}:${id}`) === 200;
      const share = (from: number, to: number) => {
        let n = 0;
        for (let i = from; i < to; i++) if (ok(i)) n++;
        return n / (to - from);
      };
      firstAttempt[policy] = { atMarks: MARKS.map((m) => share(m - WINDOW, m)), overall: share(0, total) };
    }
    opts.log('learning: A/B of the plain path, round-robin vs learning vs learning with a grammar username');
    const world = proxies.slice(BANNED);
    const [a, b] = [await gatewayOver(world, 'round-robin'), await gatewayOver(world, 'learning')];
    const rr: number[] = [];
    const learnt: number[] = [];
    const grammar: number[] = [];
    try {
      const variants = [
        () => rate(a, target.url, a.credentials.username, AB_ROUND_MS).then((v) => rr.push(v)),
        () => rate(b, target.url, b.credentials.username, AB_ROUND_MS).then((v) => learnt.push(v)),
        () =>
          rate(b, target.url, `${b.credentials.username}-session-ab-sesstime-5`, AB_ROUND_MS).then((v) =>
            grammar.push(v),
          ),
      ];
      // Each round starts with another variant (ABC, BCA, CAB, …): whatever the one before leaves
      // behind (garbage to collect, sockets closing) falls on each variant alike.
      for (let i = 0; i < AB_ROUNDS; i++)
        for (let k = 0; k < variants.length; k++) await variants[(i + k) % variants.length]?.();
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
    const rounds = (x: number[]) => x.map((v) => Math.round(v)).join(' ');
    opts.log(
      `learning: A/B rounds (req/s): round-robin ${rounds(rr)}; learning ${rounds(learnt)}; grammar ${rounds(grammar)}`,
    );
    const ratio = (x: number[]) => median(x.map((v, i) => v / (rr[i] ?? v)));
    return {
      firstAttempt,
      ab: {
        roundRobinRps: median(rr),
        learningRps: median(learnt),
        grammarRps: median(grammar),
        learningRatio: ratio(learnt),
        grammarRatio: ratio(grammar),
      },
    };
  } finally {
    await stopTarget();
    await stopProxies();
  }
}
