/**
 * The gateway against its peers, side by side in one run, each set up as a new user would: Apify's
 * `proxy-chain` (round-robin in `prepareRequestFunction`) and Squid with round-robin parents, all
 * over the same four tinyproxy upstreams (as the fleet runs them), the same loopback target and
 * the same load generator (ApacheBench, 32 clients, with and without keep-alive). Then CONNECT
 * tunnels held (RSS), tunnel set-up rate, bytes/s through one tunnel, and the gateway's SOCKS5
 * path against its HTTP CONNECT path (A/B).
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { z } from 'zod';
import { startNode, type Artifacts, type BenchChild } from './artifacts.js';
import type { Cleanup } from './cleanup.js';
import { startGatewayProcess } from './gateway-bench.js';
import { holdTunnels, type ProxyHop } from './gateway-load.js';
import { startSquid } from './squid.js';
import { startTinyproxyFleet, type TinyproxyFleet } from './tinyproxy-fleet.js';
import { median } from './stats.js';

export const PEERS = ['gateway', 'proxy-chain', 'squid'] as const;
export type Peer = (typeof PEERS)[number];

/** One peer's figures. */
export interface PeerFigures {
  /** Successful requests per second (medians of the rounds) and failed requests in all rounds, per client mode. */
  keepAlive: { rps: number; failed: number };
  close: { rps: number; failed: number };
  /** CPU ms per 1,000 successful requests (median over all rounds), of the peer's processes. */
  cpuPer1000Ms: number;
  /** RSS (MB) of the peer's processes holding `tunnels.held` CONNECT tunnels. */
  tunnels: { asked: number; held: number; rssMb: number };
  /** Tunnels opened (CONNECT, one request, close) per second. */
  connectRate: number;
  /** Bytes per second of one body through one tunnel. */
  tunnelBytesPerSecond: number;
}

export interface PeerResults {
  rounds: number;
  roundSeconds: number;
  clients: number;
  bodyMb: number;
  peers: Record<Peer, PeerFigures>;
  /** The gateway's SOCKS5 tunnels per second ÷ its HTTP CONNECT tunnels per second (median of alternating rounds). */
  socksAb: { ratio: number; rounds: number };
}

const CLIENTS = 32;
const exec = promisify(execFile);

/** User + system CPU ms and RSS MB of a process and its descendants (Squid's helpers), from /proc. */
function processTree(root: number): { cpuMs: number; rssMb: number } {
  const stats = new Map<number, string[]>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      stats.set(Number(entry), readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  const tree = new Set([root]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, f] of stats)
      if (!tree.has(pid) && tree.has(Number(f[1]))) {
        tree.add(pid);
        grew = true;
      }
  }
  let cpuMs = 0;
  let pages = 0;
  for (const pid of tree) {
    const f = stats.get(pid) ?? [];
    cpuMs += (Number(f[11]) + Number(f[12])) * 10;
    pages += Number(f[21]);
  }
  return { cpuMs, rssMb: (pages * 4096) / 2 ** 20 };
}

/** One ApacheBench round through `hop`: successful (2xx) requests per second and the failed ones. */
async function abRound(
  hop: ProxyHop & { user: string; pass: string },
  url: string,
  seconds: number,
  keepAlive: boolean,
) {
  const args = ['-q', '-c', String(CLIENTS), '-t', String(seconds), '-n', '10000000', '-X', `127.0.0.1:${hop.port}`];
  args.push('-P', `${hop.user}:${hop.pass}`, ...(keepAlive ? ['-k'] : []), url);
  const { stdout } = await exec('ab', args, { maxBuffer: 1 << 20 }).catch((err: { stdout?: string }) => ({
    stdout: err.stdout ?? '',
  }));
  const num = (label: string) => Number(new RegExp(`${label}:\\s+([\\d.]+)`).exec(stdout)?.[1] ?? 0);
  const complete = num('Complete requests');
  const failed = num('Failed requests') + num('Non-2xx responses');
  const taken = num('Time taken for tests') || seconds;
  return { ok: complete - num('Failed requests') - num('Non-2xx responses'), failed, seconds: taken };
}

/** Tunnels per second: CONNECT, one request, close, `count` of them in batches of 100. */
async function connectRate(hop: ProxyHop, authority: string, count: number): Promise<number> {
  const started = performance.now();
  const { sockets } = await holdTunnels(hop, authority, count);
  const seconds = (performance.now() - started) / 1000;
  sockets.forEach((s) => s.destroy());
  return sockets.length / seconds;
}

/** Bytes per second of GET /big (`bytes` long) through one CONNECT tunnel. */
function tunnelBytes(hop: ProxyHop, authority: string, bytes: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.connect(hop.port, '127.0.0.1');
    let head = '';
    let received = 0;
    let started = 0;
    s.once('error', reject);
    s.once('connect', () =>
      s.write(
        `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\nProxy-Authorization: ${hop.authorization}\r\n\r\n`,
      ),
    );
    const onData = (c: Buffer) => {
      if (started === 0) {
        head += c.toString('latin1');
        if (!head.includes('\r\n\r\n')) return;
        if (!head.startsWith('HTTP/1.1 200') && !head.startsWith('HTTP/1.0 200'))
          return reject(new Error(`CONNECT refused: ${head.split('\r\n')[0] ?? ''}`));
        started = performance.now();
        return void s.write(`GET /big HTTP/1.1\r\nHost: ${authority}\r\nConnection: close\r\n\r\n`);
      }
      received += c.length;
      if (received >= bytes) {
        const seconds = (performance.now() - started) / 1000;
        s.destroy();
        resolve(bytes / seconds);
      }
    };
    s.on('data', onData);
  });
}

/** One SOCKS5 tunnel (RFC 1928/1929, domain address type) through the gateway, one request, closed. */
function socksOnce(port: number, user: string, pass: string, host: string, targetPort: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1');
    let stage = 0;
    let buffered = Buffer.alloc(0);
    s.once('error', reject);
    s.once('connect', () => s.write(Buffer.from([5, 1, 2])));
    s.on('data', (c: Buffer) => {
      buffered = Buffer.concat([buffered, c]);
      if (stage === 0 && buffered.length >= 2) {
        buffered = buffered.subarray(2);
        stage = 1;
        const u = Buffer.from(user);
        const p = Buffer.from(pass);
        s.write(Buffer.concat([Buffer.from([1, u.length]), u, Buffer.from([p.length]), p]));
      } else if (stage === 1 && buffered.length >= 2) {
        if (buffered[1] !== 0) return reject(new Error('SOCKS5 credentials refused'));
        buffered = buffered.subarray(2);
        stage = 2;
        const h = Buffer.from(host);
        const req = Buffer.concat([
          Buffer.from([5, 1, 0, 3, h.length]),
          h,
          Buffer.from([targetPort >> 8, targetPort & 255]),
        ]);
        s.write(req);
      } else if (stage === 2 && buffered.length >= 10) {
        if (buffered[1] !== 0) return reject(new Error(`SOCKS5 reply ${buffered[1] ?? '?'}`));
        buffered = buffered.subarray(10);
        stage = 3;
        s.write(`GET / HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
      } else if (stage === 3 && buffered.includes('\r\n\r\n')) {
        s.destroy();
        resolve();
      }
    });
  });
}

/** Tunnels per second for `ms`, `concurrency` at a time, each opened by `open`. */
async function tunnelsPerSecond(open: () => Promise<void>, concurrency: number, ms: number): Promise<number> {
  const end = performance.now() + ms;
  let done = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < end) {
        await open();
        done++;
      }
    }),
  );
  return done / (ms / 1000);
}

/** The loopback target (bench/fixtures/target-process.ts): `GET /` answers 3 bytes, `GET /big` answers `bodyBytes` of zeros. */
async function startTarget(artifacts: Artifacts, bodyBytes: number) {
  const { child, line } = await startNode([artifacts.targetProcess, String(bodyBytes)], process.env, true);
  const { port } = z.object({ port: z.number() }).parse(JSON.parse(line));
  return { authority: `127.0.0.1:${port}`, close: () => child.stop() };
}

type Started = { child: BenchChild; hop: ProxyHop & { user: string; pass: string } };

const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

async function startProxyChain(artifacts: Artifacts, upstreams: TinyproxyFleet[]): Promise<Started> {
  const [user, pass] = ['bench', 'bench-peer-secret'];
  const urls = upstreams.map((u) => `http://bench:bench-secret@127.0.0.1:${u.hop.port}`);
  const { child, line } = await startNode(
    [artifacts.proxyChainProcess, JSON.stringify({ username: user, password: pass, upstreams: urls })],
    process.env,
    true,
  );
  const { port } = z.object({ port: z.number() }).parse(JSON.parse(line));
  return { child, hop: { port, authorization: basic(user, pass), user, pass } };
}

/**
 * @param opts.quick - 2 rounds of 2 s, 200 tunnels, a 20 MB body (else 5 rounds of 4 s, as the issue measured, and 100 MB)
 * @param opts.tunnels - CONNECT tunnels to hold for the RSS row
 */
export async function runPeerBench(
  artifacts: Artifacts,
  opts: { quick: boolean; tunnels: number; log: (m: string) => void },
  cleanup: Cleanup,
): Promise<PeerResults> {
  const rounds = opts.quick ? 2 : 5;
  const roundSeconds = opts.quick ? 2 : 4;
  const bodyMb = opts.quick ? 20 : 100;
  const target = await startTarget(artifacts, bodyMb * 2 ** 20);
  const stopTarget = cleanup.add(() => target.close());
  const url = `http://${target.authority}/`;
  const upstreams: TinyproxyFleet[] = [];
  const stops: (() => Promise<void>)[] = [stopTarget];
  try {
    for (let i = 0; i < 4; i++) {
      // Every peer holds its tunnels through these four: room for all of them (a fleet proxy serves 200).
      const u = await startTinyproxyFleet(Math.ceil(opts.tunnels / 4) + 100);
      upstreams.push(u);
      stops.push(cleanup.add(() => u.stop()));
    }
    const gw = await startGatewayProcess(
      artifacts,
      upstreams.map((u) => u.hop),
    );
    stops.push(cleanup.add(() => gw.child.stop()));
    const creds = Buffer.from(gw.gateway.authorization.slice(6), 'base64').toString().split(':');
    const started: Record<Peer, Started> = {
      gateway: { child: gw.child, hop: { ...gw.gateway, user: creds[0] ?? '', pass: creds.slice(1).join(':') } },
      'proxy-chain': await startProxyChain(artifacts, upstreams),
      squid: await startSquid(upstreams.map((u) => u.hop.port)),
    };
    stops.push(cleanup.add(() => started['proxy-chain'].child.stop()));
    stops.push(cleanup.add(() => started.squid.child.stop()));
    const pid = (p: Peer) => started[p].child.process.pid ?? 0;

    const figures = {} as Record<Peer, PeerFigures>;
    const rps: Record<Peer, Record<'keepAlive' | 'close', number[]>> = {
      gateway: { keepAlive: [], close: [] },
      'proxy-chain': { keepAlive: [], close: [] },
      squid: { keepAlive: [], close: [] },
    };
    const failed: Record<Peer, Record<'keepAlive' | 'close', number>> = {
      gateway: { keepAlive: 0, close: 0 },
      'proxy-chain': { keepAlive: 0, close: 0 },
      squid: { keepAlive: 0, close: 0 },
    };
    const cpu: Record<Peer, number[]> = { gateway: [], 'proxy-chain': [], squid: [] };
    for (const mode of ['keepAlive', 'close'] as const) {
      opts.log(
        `peers: ab, ${CLIENTS} clients ${mode === 'keepAlive' ? 'with' : 'without'} keep-alive, ${rounds} × ${roundSeconds} s each, interleaved`,
      );
      for (let r = 0; r < rounds; r++)
        for (const peer of PEERS) {
          const before = processTree(pid(peer)).cpuMs;
          const round = await abRound(started[peer].hop, url, roundSeconds, mode === 'keepAlive');
          const used = processTree(pid(peer)).cpuMs - before;
          rps[peer][mode].push(round.ok / round.seconds);
          failed[peer][mode] += round.failed;
          if (round.ok > 0) cpu[peer].push((used / round.ok) * 1000);
        }
    }
    for (const peer of PEERS) {
      const hop = started[peer].hop;
      opts.log(`peers: ${peer}: ${opts.tunnels} tunnels held, set-up rate, ${bodyMb} MB through one tunnel`);
      const held = await holdTunnels(hop, target.authority, opts.tunnels);
      await sleep(500);
      const rssMb = processTree(pid(peer)).rssMb;
      held.sockets.forEach((s) => s.destroy());
      await sleep(1000);
      const rate = median([
        await connectRate(hop, target.authority, 200),
        await connectRate(hop, target.authority, 200),
        await connectRate(hop, target.authority, 200),
      ]);
      const bytes = await tunnelBytes(hop, target.authority, bodyMb * 2 ** 20).catch(() => 0);
      figures[peer] = {
        keepAlive: { rps: median(rps[peer].keepAlive), failed: failed[peer].keepAlive },
        close: { rps: median(rps[peer].close), failed: failed[peer].close },
        cpuPer1000Ms: median(cpu[peer]),
        tunnels: { asked: opts.tunnels, held: held.sockets.length, rssMb },
        connectRate: rate,
        tunnelBytesPerSecond: bytes,
      };
    }
    opts.log('peers: the gateway, SOCKS5 tunnels ÷ HTTP CONNECT tunnels, alternating rounds');
    const g = started.gateway.hop;
    const [host, port] = [target.authority.split(':')[0] ?? '', Number(target.authority.split(':')[1])];
    const ratios: number[] = [];
    const abRounds = opts.quick ? 6 : 20;
    for (let i = 0; i < abRounds; i++) {
      const http = await tunnelsPerSecond(
        () => holdTunnels(g, target.authority, 1).then((t) => t.sockets.forEach((s) => s.destroy())),
        8,
        500,
      );
      const socks = await tunnelsPerSecond(() => socksOnce(g.port, g.user, g.pass, host, port), 8, 500);
      ratios.push(socks / http);
    }
    return {
      rounds,
      roundSeconds,
      clients: CLIENTS,
      bodyMb,
      peers: figures,
      socksAb: { ratio: median(ratios), rounds: abRounds },
    };
  } finally {
    for (const stop of stops.reverse()) await stop();
  }
}
