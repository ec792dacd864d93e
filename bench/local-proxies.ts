/**
 * The process backend's proxies at scale: how many MB each takes and how long until N of them
 * serve, on this host; the Node proxy-server of bench/node-proxy/ beside them, for comparison.
 */
import { localEgressPolicy } from '../shared/config/egress-policy.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, realpath, rm } from 'node:fs/promises';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { createLogger } from '../shared/logger.js';
import { startEchoServer, type EchoServer } from '../shared/probe/echo-server.js';
import { probeThroughProxy } from '../shared/probe/probe.js';
import { createProcessBackend, stopAllInstances } from '../relay/backends/process/index.js';
import { StateStore } from '../relay/backends/process/state.js';
import { fmt, yes } from './stats.js';

const PASSWORD = 'bench-pw';
const MB = 1024;

/** N proxies of the process backend started at once. */
export interface LocalProxiesRun {
  count: number;
  /** Until the last one answered a proxied request with its credentials (ms). */
  readyMs: number;
  /** How many answered 200 with their own egress IP, and 407 without credentials. */
  serving: number;
  /** Distinct egress IPs the echo endpoint saw. */
  egressIps: number;
  /** Mean VmRSS and Pss per proxy process (kB). */
  rssKb: number;
  pssKb: number;
  failures: string[];
}

/** The comparison: one Node process of `proxy-server.js` (bench/node-proxy/) per proxy. */
export interface NodeProxiesRun {
  count: number;
  readyMs: number;
  rssKb: number;
}

export interface LocalProxiesResults {
  runs: LocalProxiesRun[];
  before?: NodeProxiesRun;
}

/** kB of one field (`VmRSS` in status, `Pss` in smaps_rollup) of a process; 0 when it is gone. */
async function memoryKb(pid: number, file: 'status' | 'smaps_rollup', field: string): Promise<number> {
  const text = await readFile(`/proc/${pid}/${file}`, 'utf8').catch(() => '');
  return Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(text)?.[1] ?? 0);
}

/** The status a proxy answers a plain request without credentials with (0 when it cannot be reached). */
function statusWithoutCredentials(port: number, url: string): Promise<number> {
  return new Promise((resolve) => {
    http
      .get({ host: '127.0.0.1', port, path: url, headers: { host: new URL(url).host }, agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      })
      .on('error', () => resolve(0));
  });
}

/** Starts `count` proxies at once through the real backend, checks each serves, then stops them. */
async function runOnce(count: number, echo: EchoServer, firstPort: number): Promise<LocalProxiesRun> {
  const stateDir = await mkdtemp(join(tmpdir(), 'egress-bench-local-'));
  const backend = createProcessBackend({
    provider: 'bench',
    installationId: 'bench',
    stateDir,
    bindAddresses: ['127.0.0.1'],
    portRange: [firstPort, firstPort + count + 199],
    egressAddresses: '127.5.0.0/16',
    // Loopback stands in for the Internet here: every loopback port is allowed.
    egress: localEgressPolicy([]),
    logger: createLogger({ write: () => undefined }),
    startTimeoutSeconds: 60,
  });
  const failures: string[] = [];
  const ips = new Set<string>();
  const credentials = { username: 'bench', password: PASSWORD };
  const started = performance.now();
  let readyMs = 0;
  const serve = async (name: string): Promise<boolean> => {
    const instance = await backend.create({
      name,
      proxy: name,
      installationId: 'bench',
      specHash: 'h',
      port: 0,
      placement: {},
      credentials,
    });
    // The relay's own Ready probe: a CONNECT tunnel to the echo endpoint with the credentials.
    const probe = await probeThroughProxy({
      host: instance.ip,
      port: instance.port,
      echoUrl: echo.url,
      timeoutMs: 30_000,
      ...credentials,
    });
    const denied = await statusWithoutCredentials(instance.port, echo.url);
    readyMs = Math.max(readyMs, performance.now() - started);
    if (!probe.ok || !probe.egressIp || denied !== 407) throw new Error(`${name}: ${probe.error ?? 'ok'}, ${denied}`);
    ips.add(probe.egressIp);
    return true;
  };
  try {
    const names = Array.from({ length: count }, (_, i) => `bench-${i}`);
    const outcomes = await Promise.allSettled(names.map(serve));
    for (const o of outcomes) if (o.status === 'rejected') failures.push(String(o.reason));
    const store = new StateStore(await realpath(stateDir));
    const pids = (await store.readAll()).flatMap(({ result }) => (result.kind === 'ok' ? [result.record.pid] : []));
    // The forwarder (relay/backends/process/forwarder.ts) serves them all: its share counts too.
    const forwarder = await readFile(store.forwarderPaths('bench').record, 'utf8')
      .then((text) => [(JSON.parse(text) as { pid: number }).pid])
      .catch(() => []);
    const all = [...pids, ...forwarder];
    const rss = await Promise.all(all.map((pid) => memoryKb(pid, 'status', 'VmRSS')));
    const pss = await Promise.all(all.map((pid) => memoryKb(pid, 'smaps_rollup', 'Pss')));
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, pids.length);
    const serving = outcomes.filter((o) => o.status === 'fulfilled').length;
    return { count, readyMs, serving, egressIps: ips.size, rssKb: mean(rss), pssKb: mean(pss), failures };
  } finally {
    await backend.close();
    await stopAllInstances(stateDir);
    await rm(stateDir, { recursive: true, force: true });
  }
}

/** `count` Node proxy-server processes, one per proxy, until each printed its ready line. */
async function runNode(proxyServer: string, count: number, firstPort: number): Promise<NodeProxiesRun> {
  const { NODE_OPTIONS: _loaders, ...env } = process.env;
  const children: ChildProcess[] = [];
  const started = performance.now();
  try {
    const ready = Array.from({ length: count }, (_, i) => {
      const child = spawn(process.execPath, [proxyServer, `--egress-proxy=bench-node-${i}`], {
        stdio: ['pipe', 'pipe', 'ignore'],
        env,
      });
      children.push(child);
      const config = { name: `bench-node-${i}`, host: '127.0.0.1', port: firstPort + i, username: 'b', password: 'p' };
      child.stdin?.end(JSON.stringify(config));
      return new Promise<void>((resolve, reject) => {
        const lines = createInterface({ input: child.stdout });
        lines.once('line', (line) =>
          (JSON.parse(line) as { ready?: boolean }).ready ? resolve() : reject(new Error(line)),
        );
        child.once('exit', (code) => reject(new Error(`proxy-server exited ${code ?? '?'}`)));
      });
    });
    await Promise.all(ready);
    const readyMs = performance.now() - started;
    const rss = await Promise.all(children.map((c) => memoryKb(c.pid ?? 0, 'status', 'VmRSS')));
    return { count, readyMs, rssKb: rss.reduce((a, b) => a + b, 0) / count };
  } finally {
    for (const c of children) c.kill('SIGKILL');
  }
}

/**
 * @param sizes - proxy counts to start at once (the targets: 100 in ≤ 10 s, 1,000 on one host)
 * @param proxyServer - the built `proxy-server.js`, measured with 10 processes for comparison
 */
export async function runLocalProxiesBench(
  sizes: readonly number[],
  proxyServer: string,
  log: (m: string) => void,
): Promise<LocalProxiesResults> {
  const echo = await startEchoServer();
  try {
    const runs: LocalProxiesRun[] = [];
    for (const size of sizes) {
      log(`local proxies: ${size} tinyproxy processes through the process backend`);
      runs.push(await runOnce(size, echo, 28_000));
      log(`  ${runs.at(-1)?.serving ?? 0}/${size} serving in ${fmt((runs.at(-1)?.readyMs ?? 0) / 1000, 1)} s`);
    }
    log('local proxies: 10 Node proxy-server processes, as before');
    const before = await runNode(proxyServer, 10, 27_000);
    return { runs, before };
  } finally {
    await echo.close();
  }
}

/** The target rows: RSS per proxy, 100 serving within 10 s, 1,000 on one host; the Node figures for comparison. */
export function localProxyRows(r: LocalProxiesResults | undefined): string[][] {
  if (!r) return [['local proxies (process backend)', '≤ 5 MB, 100 ≤ 10 s, 1,000', 'not run (--only)', '—']];
  const rows: string[][] = [];
  const mb = (kb: number) => `${fmt(kb / MB, 1)} MB`;
  const hundred = r.runs.find((x) => x.count === 100) ?? r.runs[0];
  if (hundred) {
    const tag = `(tinyproxy, ${hundred.count} running)`;
    rows.push([
      `RSS per local proxy ${tag}`,
      '≤ 5 MB',
      `${mb(hundred.rssKb)} (PSS ${mb(hundred.pssKb)})`,
      yes(hundred.rssKb <= 5 * MB),
    ]);
  }
  for (const run of r.runs) {
    const all = run.serving === run.count;
    const result = `${fmt(run.readyMs / 1000, 1)} s, ${run.serving}/${run.count} serving, ${run.egressIps} egress IPs, ${mb(run.rssKb)} RSS each`;
    if (run.count === 100)
      rows.push([
        '100 local proxies started and serving (2 cores)',
        '≤ 10 s',
        result,
        yes(all && run.readyMs <= 10_000),
      ]);
    else rows.push([`${run.count.toLocaleString('en')} local proxies on one host`, 'all serving', result, yes(all)]);
  }
  if (r.before) {
    const b = r.before;
    rows.push([
      `before: RSS per local proxy, a Node proxy-server process each (${b.count} running)`,
      'reference',
      mb(b.rssKb),
      'info',
    ]);
    rows.push([
      `before: ${b.count} Node proxy-server processes listening`,
      'reference',
      `${fmt(b.readyMs / 1000, 1)} s`,
      'info',
    ]);
  }
  return rows;
}
