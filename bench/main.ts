/**
 * `npm run bench`: starts its own emulators on free ports, measures cold start, orchestration
 * overhead and the fleet's steady-state cost and scale, prints the tables, stops what it started.
 * Options: `--quick` (small sizes, few repeats, short peer rounds), `--sizes=100,1000,10000`,
 * `--only=cold,orch,fleet,libvirt,gateway,learning,peers,local,demand` (`demand` starts `npm start`'s
 * stack at EGRESS_PORT_OFFSET, default 1500; `--quick` halves its trace), `--tunnels=N` (CONNECT tunnels the
 * peer section holds for its RSS row; default 10,000, or as many as one proxy process can hold
 * under the open-file limit (9,800 at 20,000 files); 200 with `--quick`),
 * `--soak[=SECONDS]` (the gateway's RSS soak, default 600 s: the issue's 10 minutes; left out
 * of the default run so it stays short),
 * `--out=DIR` (default test-results/bench).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus, totalmem } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { z } from 'zod';
import { performance } from 'node:perf_hooks';
import { freePort, startEmulators } from '../infra/local/emulators.js';
import { prepareArtifacts, startNode, type Artifacts, type BenchChild } from './artifacts.js';
import { Cleanup } from './cleanup.js';
import { importBreakdown, runColdStart } from './cold-start.js';
import { steadyCycle, sweepFleet, type CycleCost, type SweepResult } from './fleet-bench.js';
import { runDemandBench } from './demand-bench.js';
import { runGatewayBench } from './gateway-bench.js';
import { runLearningBench } from './learning-bench.js';
import { runLocalProxiesBench } from './local-proxies.js';
import { runOrchestration } from './orchestration.js';
import { runPeerBench } from './peer-bench.js';
import { benchLibvirt } from './libvirt.js';
import { coldTable, importTable } from './report-cold.js';
import type { LibvirtRatio } from './report-gateway.js';
import { costTable, cycleTable, orchestrationTable, scaleTable, targetsTable, type BenchResults } from './report.js';
import { fmt } from './stats.js';

const STEADY_SIZE = 1000;

function repoRoot(): string {
  for (let dir = process.cwd(); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'firebase.json')) && existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error('run the bench from the repository (no firebase.json found)');
  }
}

const optionsSchema = z.object({
  quick: z.boolean(),
  sizes: z.array(z.number().int().min(1).max(20_000)).min(1),
  only: z.array(z.enum(['cold', 'orch', 'fleet', 'libvirt', 'gateway', 'learning', 'peers', 'local', 'demand'])).min(1),
  tunnels: z.number().int().min(1).max(20_000),
  soak: z.number().int().min(60).max(86_400).optional(),
  out: z.string().min(1).optional(),
});

/**
 * At most `wanted` tunnels, and no more than a proxy process can hold here: each tunnel is two
 * sockets in the proxy (its client and its upstream), and every peer runs as one process under the
 * same open-file limit (20,000 on this machine: 10,000 tunnels are out of reach of any of them).
 */
function tunnelsWithinFileLimit(wanted: number): number {
  const line = existsSync('/proc/self/limits')
    ? readFileSync('/proc/self/limits', 'utf8')
        .split('\n')
        .find((l) => l.startsWith('Max open files'))
    : undefined;
  const soft = Number(line?.split(/\s{2,}/)[1]);
  if (!Number.isFinite(soft)) return wanted;
  // Room for what each process holds besides its tunnels (listeners, logs, helpers).
  return Math.min(wanted, Math.floor((soft - 400) / 2 / 100) * 100);
}

function parseOptions(argv: string[]): z.infer<typeof optionsSchema> {
  const value = (name: string) => argv.find((a) => a.startsWith(`--${name}=`))?.split('=')[1];
  const quick = argv.includes('--quick');
  const sizes = value('sizes')?.split(',').map(Number) ?? (quick ? [100, 1000] : [100, 1000, 10_000]);
  const only = value('only')?.split(',') ?? [
    'cold',
    'orch',
    'fleet',
    'libvirt',
    'gateway',
    'learning',
    'peers',
    'local',
    'demand',
  ];
  const tunnels = Number(value('tunnels') ?? (quick ? 200 : tunnelsWithinFileLimit(10_000)));
  const soak = argv.includes('--soak') ? 600 : value('soak') === undefined ? undefined : Number(value('soak'));
  return optionsSchema.parse({ quick, sizes, only, tunnels, soak, out: value('out') });
}

function machine(): string {
  const cpu = cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${Math.round(totalmem() / 2 ** 30)} GiB RAM, Node ${process.version}, ${process.platform}`;
}

async function startPool(artifacts: Artifacts, size: number): Promise<{ child: BenchChild; ports: number[] }> {
  const { child, line } = await startNode([artifacts.echoPool, String(size)], process.env, true);
  return { child, ports: z.object({ ports: z.array(z.number()) }).parse(JSON.parse(line)).ports };
}

/**
 * The libvirt client: 500 state look-ups pipelined on one connection against the
 * same through `virsh`, on a real libvirtd started for the run (bench/libvirt.ts).
 */
function libvirtBench(): () => Promise<LibvirtRatio> {
  return () => benchLibvirt({ count: 500 });
}

/**
 * The bench: each `--only` section in turn, then the tables. The sections run in this order and
 * share the emulators, the echo pool and one cleanup; each section's block wires a module that
 * does the work (bench/*.ts).
 */
async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  const root = repoRoot();
  const out = resolve(opts.out ?? join(root, 'test-results', 'bench'));
  mkdirSync(out, { recursive: true });
  const log = (m: string) => console.log(`[bench] ${m}`);
  const artifacts = await prepareArtifacts(root);
  const results: BenchResults = {
    date: new Date().toISOString(),
    machine: machine(),
    coldStart: [],
    imports: [],
    orchestration: [],
    sweeps: [],
    cycles: [],
    errors: [],
  };
  // Everything the bench starts is stopped here, newest first, also on Ctrl-C or a kill: the
  // emulators, the echo pool, the orchestration stack (its functions and detached proxy processes).
  const cleanup = new Cleanup();
  cleanup.add(() => Promise.resolve(artifacts.close()));
  /** Stops what the bench started, writes what was measured, and exits with `code`. */
  const stopEarly = (code: number) =>
    void cleanup.run().then(() => {
      writeResults(out, results, log);
      process.exit(code);
    });
  const interrupted = (signal: NodeJS.Signals) => {
    log(`${signal}: stopping what the bench started`);
    results.errors.push(`interrupted by ${signal}: the tables hold only what was measured before`);
    stopEarly(130);
  };
  process.once('SIGINT', interrupted);
  process.once('SIGTERM', interrupted);
  // A promise rejected with no handler (seen once: a Firestore client's retried query after its
  // teardown, at the end of the demand section) ends the process and would leave the stacks the
  // bench started running, loading the machine for whatever runs next: stop them first.
  let failing = false;
  process.on('unhandledRejection', (reason) => {
    log(`unhandled rejection: ${reason instanceof Error ? (reason.stack ?? reason.message) : String(reason)}`);
    results.errors.push(`stopped by an unhandled rejection: ${String(reason)}`);
    if (failing) return;
    failing = true;
    stopEarly(1);
  });
  try {
    // Only the control-plane sections use the emulators; the libvirt and gateway ones do not.
    const hosts = { firestoreHost: '', pubsubHost: '' };
    if (opts.only.some((s) => s === 'cold' || s === 'orch' || s === 'fleet')) {
      log('starting the Firestore and Pub/Sub emulators on free ports');
      const firestorePort = await freePort();
      let pubsubPort = await freePort();
      while (pubsubPort === firestorePort) pubsubPort = await freePort();
      // 10,000 proxies with their credentials and inventory: 2 GiB was full (G1 churning) at 10,000 directly probed.
      const logDir = join(out, 'emulators');
      const emulators = await startEmulators({
        host: '127.0.0.1',
        firestorePort,
        pubsubPort,
        logDir,
        firestoreHeapMb: 6144,
      });
      cleanup.add(() => emulators.stop());
      process.env['FIRESTORE_EMULATOR_HOST'] = emulators.firestoreHost;
      process.env['PUBSUB_EMULATOR_HOST'] = emulators.pubsubHost;
      process.env['METADATA_SERVER_DETECTION'] = 'none';
      hosts.firestoreHost = emulators.firestoreHost;
      hosts.pubsubHost = emulators.pubsubHost;
    }

    if (opts.only.includes('cold')) {
      log('cold start: importing each built function in a fresh process, paired with a hello-world');
      const env = { PATH: process.env['PATH'], GOOGLE_CLOUD_PROJECT: 'bench-cold', METADATA_SERVER_DETECTION: 'none' };
      results.coldStart = await runColdStart(artifacts, opts.quick ? 3 : 7, { ...env, ...hosts });
      results.imports = await importBreakdown(artifacts, 3, { ...env, ...hosts });
    }
    if (opts.only.includes('orch')) {
      log('orchestration: functions under functions-framework, a real relay, real proxy processes');
      try {
        const orchestration = await runOrchestration(artifacts, hosts, out, opts.quick ? 3 : 9, cleanup);
        results.orchestration = orchestration.trials;
        results.functionResponses = orchestration.responses;
        if ('error' in orchestration.pool) results.errors.push(`orchestration pool: ${orchestration.pool.error}`);
        else results.poolRoll = orchestration.pool;
      } catch (err) {
        // The other sections still run; the table says why this one has no figures.
        results.errors.push(`orchestration: ${err instanceof Error ? err.message : String(err)}`);
        log(`orchestration failed: ${results.errors.at(-1) ?? ''}`);
      }
    }
    if (opts.only.includes('fleet')) {
      const pool = await startPool(artifacts, 16);
      cleanup.add(() => pool.child.stop());
      const fleetOpts = {
        echoUrl: 'http://127.0.0.1:9/',
        logDir: out,
        poolPorts: pool.ports,
        repeats: opts.quick ? 2 : 3,
        firestoreHost: hosts.firestoreHost,
      };
      for (const kind of ['direct', 'relay'] as const) {
        for (const size of opts.sizes) {
          log(`fleet: ${size} stored ${kind === 'relay' ? 'relay-backed' : 'directly probed'} proxies`);
          const started = performance.now();
          const run: { sweep: SweepResult; cycle?: CycleCost } = await sweepFleet(
            kind,
            size,
            fleetOpts,
            size >= STEADY_SIZE || opts.sizes.length === 1 ? steadyCycle : undefined,
          );
          results.sweeps.push(run.sweep);
          if (run.cycle) results.cycles.push(run.cycle);
          log(`  done in ${fmt((performance.now() - started) / 1000, 0)} s (seeding included)`);
          if (run.sweep.failures.length > 0) log(`  failures: ${run.sweep.failures.slice(0, 3).join('; ')}`);
        }
      }
    }
    if (opts.only.includes('gateway')) {
      log('gateway: against going straight through one fleet proxy (a Node proxy-server process, then tinyproxy)');
      try {
        results.gateway = await runGatewayBench(
          artifacts,
          { soakSeconds: opts.soak, pairs: opts.quick ? 500 : 2000, log },
          cleanup,
        );
      } catch (err) {
        results.errors.push(`gateway: ${err instanceof Error ? err.message : String(err)}`);
        log(`gateway failed: ${results.errors.at(-1) ?? ''}`);
      }
    }
    if (opts.only.includes('learning')) {
      try {
        results.learning = await runLearningBench({ log }, cleanup);
      } catch (err) {
        results.errors.push(`learning: ${err instanceof Error ? err.message : String(err)}`);
        log(`learning failed: ${results.errors.at(-1) ?? ''}`);
      }
    }
    if (opts.only.includes('peers')) {
      try {
        results.peers = await runPeerBench(artifacts, { quick: opts.quick, tunnels: opts.tunnels, log }, cleanup);
      } catch (err) {
        results.errors.push(`peers: ${err instanceof Error ? err.message : String(err)}`);
        log(`peers failed: ${results.errors.at(-1) ?? ''}`);
      }
    }
    if (opts.only.includes('local')) {
      results.localProxies = await runLocalProxiesBench(opts.quick ? [100] : [100, 1000], artifacts.proxyServer, log);
    }
    if (opts.only.includes('libvirt')) {
      log('libvirt: state look-ups pipelined on one connection, then through virsh');
      results.libvirt = await libvirtBench()();
    }
    // Last: it starts the local stack, which points this process's Firestore and Pub/Sub clients at its emulators.
    if (opts.only.includes('demand')) {
      try {
        results.demand = await runDemandBench({ quick: opts.quick, logDir: out, log }, cleanup);
      } catch (err) {
        results.errors.push(`demand: ${err instanceof Error ? err.message : String(err)}`);
        log(`demand failed: ${results.errors.at(-1) ?? ''}`);
      }
    }
  } finally {
    await cleanup.run();
  }
  writeResults(out, results, log);
}

/** Writes results.json and results.md to `out` and prints the tables (also for an interrupted run). */
function writeResults(out: string, results: BenchResults, log: (m: string) => void): void {
  writeFileSync(join(out, 'results.json'), `${JSON.stringify(results, null, 2)}\n`);
  const sections = [
    `# Benchmark ${results.date}\n\nMachine: ${results.machine}\n`,
    results.errors.length > 0 ? `Errors: ${results.errors.join('; ')}` : '',
    `## Targets\n\n${targetsTable(results)}`,
    results.cycles.length > 0 ? `## Steady state: where each cycle's operations go\n\n${cycleTable(results)}` : '',
    results.cycles.length > 0 ? `## Monthly cost\n\n${costTable(results)}` : '',
    results.sweeps.length > 0 ? `## Fleet scale\n\n${scaleTable(results)}` : '',
    results.orchestration.length > 0 ? `## Orchestration trials\n\n${orchestrationTable(results.orchestration)}` : '',
    results.coldStart.length > 0 ? `## Cold start\n\n${coldTable(results.coldStart)}` : '',
    results.imports.length > 0 ? `## Where the \`check\` import goes\n\n${importTable(results.imports)}` : '',
  ];
  const text = sections.filter(Boolean).join('\n\n');
  writeFileSync(join(out, 'results.md'), `${text}\n`);
  console.log(`\n${text}\n`);
  log(`results: ${resolve(out, 'results.md')} and results.json; logs in ${out}`);
}

main().catch((err: unknown) => {
  console.error(`[bench] ERROR ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
