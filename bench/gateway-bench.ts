/**
 * The gateway against going straight through one fleet proxy, side by side in one run: p50 added
 * latency, throughput, 1,000 CONNECT tunnels held (the gateway's RSS), and RSS over a soak.
 * The fleet proxy is tinyproxy as every backend runs it (`tinyproxy-fleet.ts`), in rounds of their
 * own; the tunnels, the soak and reference rounds use the keep-alive Node proxy-server of
 * `bench/node-proxy/`, which no backend runs. The gateway runs as its own process.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { freePort } from '../infra/local/emulators.js';
import { benchChild, startNode, type Artifacts, type BenchChild } from './artifacts.js';
import type { Cleanup } from './cleanup.js';
import { getThrough, holdTunnels, throughput, type ProxyHop } from './gateway-load.js';
import { startTinyproxyFleet } from './tinyproxy-fleet.js';
import { median } from './stats.js';

export interface GatewayResults {
  directP50Ms: number;
  gatewayP50Ms: number;
  directRps: number;
  gatewayRps: number;
  tunnels: { count: number; failed: number; rssMb: number };
  /** CPU time (ms) per 1,000 requests through the gateway, of the fleet proxy and of the gateway (medians of the rounds). */
  cpuPer1000?: { fleetMs: number; gatewayMs: number };
  /** RSS samples at equal intervals over the soak, when it ran (`--soak`). */
  soak?: { seconds: number; rssMb: number[] };
  /** The same latency pairs and throughput rounds against a tinyproxy fleet proxy (what the fleet runs). */
  tinyproxy?: { directP50Ms: number; gatewayP50Ms: number; directRps: number; gatewayRps: number };
}

/** Samples over a soak: one every soak/60, so a 10-minute soak gives one every 10 s. */
const SOAK_SAMPLES = 60;

/** Concurrent keep-alive clients of the throughput rounds: enough to keep the fleet proxy busy. */
export const CLIENTS = 32;

/** User + system CPU time of a process so far, in ms (`/proc/<pid>/stat`, clock ticks of 10 ms). */
const cpuMs = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
};
const rssMb = (pid: number) =>
  Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

async function startFleetProxy(script: string): Promise<{ child: BenchChild; hop: ProxyHop }> {
  const port = await freePort();
  const config = { name: 'bench-gateway', host: '127.0.0.1', port, username: 'bench', password: 'bench-secret' };
  const proc = spawn(process.execPath, [script], { stdio: ['pipe', 'pipe', 'ignore'] });
  proc.stdin.end(JSON.stringify(config));
  const line = await new Promise<string>((resolve, reject) => {
    proc.stdout.once('data', (c: Buffer) => resolve(c.toString('utf8').split('\n')[0] ?? ''));
    proc.once('exit', (code) => reject(new Error(`the fleet proxy exited with ${code ?? '?'}`)));
  });
  z.object({ ready: z.literal(true) }).parse(JSON.parse(line));
  return { child: benchChild(proc), hop: { port, authorization: basic(config.username, config.password) } };
}

/** A gateway process in front of fleet proxies on loopback; its own credentials come from the URL it prints. */
export async function startGatewayProcess(
  artifacts: Artifacts,
  fleet: readonly ProxyHop[],
): Promise<{ child: BenchChild; gateway: ProxyHop }> {
  const upstreams = fleet.map((hop, i) => ({
    name: i === 0 ? 'bench-gateway' : `bench-gateway-${i}`,
    host: '127.0.0.1',
    port: hop.port,
    authorization: hop.authorization,
  }));
  const { child, line } = await startNode([artifacts.gatewayProcess, JSON.stringify(upstreams)], process.env, true);
  try {
    const started = z.object({ url: z.string(), port: z.number() }).parse(JSON.parse(line));
    const creds = new URL(started.url);
    const authorization = basic(decodeURIComponent(creds.username), decodeURIComponent(creds.password));
    return { child, gateway: { port: started.port, authorization } };
  } catch (err) {
    await child.stop();
    throw err;
  }
}

/** Latency pairs and 10 alternating throughput rounds, direct through tinyproxy and through a gateway in front of it. */
async function againstTinyproxy(artifacts: Artifacts, url: string, pairs: number, cleanup: Cleanup) {
  const fleet = await startTinyproxyFleet();
  const stopFleet = cleanup.add(() => fleet.stop());
  const { child, gateway } = await startGatewayProcess(artifacts, [fleet.hop]);
  const stopGateway = cleanup.add(() => child.stop());
  try {
    // tinyproxy closes each connection after its answer: straight to it, every request connects anew.
    const latency = await pairedLatency(fleet.hop, gateway, url, pairs, false);
    const d: number[] = [];
    const g: number[] = [];
    for (let i = 0; i < 10; i++) {
      d.push(await throughput(fleet.hop, url, CLIENTS, 1000, false));
      g.push(await throughput(gateway, url, CLIENTS, 1000));
    }
    return { ...latency, directRps: median(d), gatewayRps: median(g) };
  } finally {
    await stopGateway();
    await stopFleet();
  }
}

/** Alternates direct and gateway requests one by one, so both see the same machine at the same moment. */
async function pairedLatency(
  direct: ProxyHop,
  gateway: ProxyHop,
  target: string,
  pairs: number,
  directKeepAlive = true,
) {
  const agents = [
    new http.Agent(directKeepAlive ? { keepAlive: true, maxSockets: 1 } : { keepAlive: false }),
    new http.Agent({ keepAlive: true, maxSockets: 1 }),
  ];
  const d: number[] = [];
  const g: number[] = [];
  for (let i = 0; i < pairs + 100; i++) {
    const a = await getThrough(direct, target, agents[0]!);
    const b = await getThrough(gateway, target, agents[1]!);
    // The first 100 pairs warm both paths up.
    if (i < 100) continue;
    d.push(a);
    g.push(b);
  }
  agents.forEach((x) => x.destroy());
  return { directP50Ms: median(d), gatewayP50Ms: median(g) };
}

/**
 * RSS of the gateway process sampled while it serves keep-alive requests and opens and closes
 * batches of tunnels for `seconds`.
 */
async function soak(gateway: ProxyHop, pid: number, url: string, authority: string, seconds: number) {
  const samples: number[] = [];
  const end = Date.now() + seconds * 1000;
  const every = (seconds / SOAK_SAMPLES) * 1000;
  while (Date.now() < end) {
    await Promise.all([
      throughput(gateway, url, 16, every),
      holdTunnels(gateway, authority, 100).then((t) => t.sockets.forEach((s) => s.destroy())),
    ]);
    samples.push(rssMb(pid));
  }
  return { seconds, rssMb: samples };
}

/**
 * @param opts.soakSeconds - how long the RSS soak runs (`--soak`, 600 s: the issue's 10 minutes); absent: no soak
 * @param opts.pairs - latency pairs
 */
export async function runGatewayBench(
  artifacts: Artifacts,
  opts: { soakSeconds: number | undefined; pairs: number; log: (m: string) => void },
  cleanup: Cleanup,
): Promise<GatewayResults> {
  const target = http.createServer({ keepAliveTimeout: 60_000 }, (_req, res) =>
    res.writeHead(200, { 'content-type': 'text/plain', 'content-length': '3' }).end('ok\n'),
  );
  await new Promise<void>((resolve) => target.listen(0, '127.0.0.1', () => resolve()));
  const stopTarget = cleanup.add(async () => {
    target.closeAllConnections();
    await new Promise<void>((resolve) => target.close(() => resolve()));
  });
  const authority = `127.0.0.1:${(target.address() as AddressInfo).port}`;
  const url = `http://${authority}/`;
  const fleet = await startFleetProxy(artifacts.proxyServer);
  const stopFleet = cleanup.add(() => fleet.child.stop());
  const { child, gateway } = await startGatewayProcess(artifacts, [fleet.hop]);
  const stopGateway = cleanup.add(() => child.stop());
  try {
    const pid = child.process.pid ?? 0;
    opts.log(`gateway: ${opts.pairs} latency pairs`);
    const latency = await pairedLatency(fleet.hop, gateway, url, opts.pairs);
    opts.log(`gateway: throughput, ${CLIENTS} keep-alive clients, direct and through the gateway in turn`);
    const d: number[] = [];
    const g: number[] = [];
    const fleetCpu: number[] = [];
    const gatewayCpu: number[] = [];
    // Many short alternating rounds: on a shared machine the load drifts within seconds.
    for (let i = 0; i < 10; i++) {
      d.push(await throughput(fleet.hop, url, CLIENTS, 1000));
      const before = [cpuMs(fleet.child.process.pid ?? 0), cpuMs(pid)];
      g.push(await throughput(gateway, url, CLIENTS, 1000));
      fleetCpu.push(((cpuMs(fleet.child.process.pid ?? 0) - (before[0] ?? 0)) / (g.at(-1) ?? 1)) * 1000);
      gatewayCpu.push(((cpuMs(pid) - (before[1] ?? 0)) / (g.at(-1) ?? 1)) * 1000);
    }
    opts.log('gateway: 1,000 concurrent CONNECT tunnels');
    const held = await holdTunnels(gateway, authority, 1000);
    await sleep(500);
    const tunnels = { count: held.sockets.length, failed: held.failed, rssMb: rssMb(pid) };
    held.sockets.forEach((s) => s.destroy());
    let soaked: GatewayResults['soak'];
    if (opts.soakSeconds !== undefined) {
      opts.log(`gateway: RSS over a ${opts.soakSeconds} s soak (requests and tunnels)`);
      soaked = await soak(gateway, pid, url, authority, opts.soakSeconds);
    }
    opts.log('gateway: the same pairs and rounds against a tinyproxy fleet proxy');
    const tinyproxy = await againstTinyproxy(artifacts, url, opts.pairs, cleanup);
    return {
      ...latency,
      tinyproxy,
      directRps: median(d),
      gatewayRps: median(g),
      cpuPer1000: { fleetMs: median(fleetCpu), gatewayMs: median(gatewayCpu) },
      tunnels,
      ...(soaked && { soak: soaked }),
    };
  } finally {
    await stopGateway();
    await stopFleet();
    await stopTarget();
  }
}
