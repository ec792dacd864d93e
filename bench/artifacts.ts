/**
 * The bench's copies of the built artifacts (dist/ may be rebuilt by someone else mid-run) and its
 * fixtures, bundled with their packages external (the hello-world and the clients-only reference
 * load their SDKs from node_modules as they are published).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { build } from 'esbuild';

export interface Artifacts {
  dir: string;
  /** Function name → its copied `index.js` (from dist/functions/<name>/). */
  functions: Map<string, string>;
  /** Function name → directory to give functions-framework as `--source`. */
  sources: Map<string, string>;
  proxyServer: string;
  importProbe: string;
  echoPool: string;
  /** Apify's proxy-chain, round-robin over upstreams, as its own process (bench/fixtures/proxy-chain-process.ts). */
  proxyChainProcess: string;
  /** The gateway as its own process (bench/fixtures/gateway-process.ts). */
  gatewayProcess: string;
  /** The peers bench's loopback target as its own process (bench/fixtures/target-process.ts). */
  targetProcess: string;
  close(): void;
}

/** The fixtures' bundle options: packages stay in node_modules. */
const BUNDLE = {
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  packages: 'external',
  logLevel: 'warning',
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
  },
} as const;

/**
 * @param root - the repository root (after `npm run build`)
 * @throws Error when dist/ has no function bundles
 */
export async function prepareArtifacts(root: string): Promise<Artifacts> {
  const dist = join(root, 'dist');
  if (!existsSync(join(dist, 'functions'))) throw new Error('dist/functions is missing: run `npm run build` first');
  // Under node_modules/ so that the bundles' external imports resolve; outside dist/ so a rebuild cannot wipe it.
  const dir = join(root, 'node_modules', '.cache', 'egress-bench', `run-${process.pid}`);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  cpSync(join(dist, 'functions'), join(dir, 'functions'), { recursive: true });
  // The Node proxy-server, the reference the bench measures tinyproxy and the gateway against.
  await build({
    ...BUNDLE,
    absWorkingDir: root,
    entryPoints: [join('bench', 'node-proxy', 'server.ts')],
    outfile: join(dir, 'proxy-server.js'),
  });
  const functions = new Map<string, string>();
  const sources = new Map<string, string>();
  for (const name of readdirSync(join(dir, 'functions')).sort()) {
    const source = join(dir, 'functions', name);
    if (!existsSync(join(source, 'index.js'))) continue;
    functions.set(name, join(source, 'index.js'));
    sources.set(name, source);
  }
  for (const fixture of ['hello', 'clients', 'floor']) {
    const source = join(dir, 'fixtures', fixture);
    mkdirSync(source, { recursive: true });
    await build({
      ...BUNDLE,
      absWorkingDir: root,
      entryPoints: [join('bench', 'fixtures', `${fixture}-function.ts`)],
      outfile: join(source, 'index.js'),
    });
    writeFileSync(
      join(source, 'package.json'),
      JSON.stringify({ name: `bench-${fixture}`, type: 'module', main: 'index.js' }),
    );
    sources.set(`bench-${fixture}`, source);
  }
  const script = async (name: string) => {
    const outfile = join(dir, 'fixtures', `${name}.js`);
    await build({ ...BUNDLE, absWorkingDir: root, entryPoints: [join('bench', 'fixtures', `${name}.ts`)], outfile });
    return outfile;
  };
  return {
    dir,
    functions,
    sources,
    proxyServer: join(dir, 'proxy-server.js'),
    importProbe: await script('import-probe'),
    echoPool: await script('echo-proxy-pool'),
    gatewayProcess: await script('gateway-process'),
    proxyChainProcess: await script('proxy-chain-process'),
    targetProcess: await script('target-process'),
    close: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** A child process started by the bench, stopped by its PID. */
export interface BenchChild {
  process: ChildProcess;
  /** SIGTERM, then SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** `proc` as a BenchChild; `afterExit` runs once it has exited on `stop` (its files, say). */
export function benchChild(proc: ChildProcess, afterExit: () => void = () => undefined): BenchChild {
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  return {
    process: proc,
    async stop(graceMs = 3000) {
      if (proc.exitCode === null && proc.signalCode === null) {
        if (proc.pid !== undefined) process.kill(proc.pid, 'SIGTERM');
        const timer = setTimeout(() => proc.pid !== undefined && process.kill(proc.pid, 'SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      afterExit();
    },
  };
}

/** Starts `node args…`; resolves with the child and its first stdout line (when `waitLine`). */
export async function startNode(
  args: string[],
  env: NodeJS.ProcessEnv,
  waitLine: boolean,
): Promise<{ child: BenchChild; line: string }> {
  const proc = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (c: Buffer) => {
    stderr = (stderr + c.toString('utf8')).slice(-4000);
  });
  const child = benchChild(proc);
  if (!waitLine) return { child, line: '' };
  const line = await new Promise<string>((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (c: Buffer) => {
      out += c.toString('utf8');
      const nl = out.indexOf('\n');
      if (nl >= 0) resolve(out.slice(0, nl));
    });
    proc.once('exit', (code) => reject(new Error(`${args[0] ?? 'node'} exited with ${code ?? '?'}: ${stderr}`)));
  });
  return { child, line };
}
