/** Drives `npm start` as a user would: the built launcher as a child process, its output, its state. */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { z } from 'zod';

export interface RunningStack {
  process: ChildProcess;
  home: string;
  /** Everything the launcher printed so far. */
  output(): string;
  /** The `.egress/local.env` values. */
  localEnv(): Record<string, string>;
  db: Firestore;
  pubsub: PubSub;
  /** Sends SIGINT (Ctrl-C) and resolves with the exit code. */
  interrupt(): Promise<number | null>;
  /** Every line of the functions' and the relay's logs that mentions one of `needles`, oldest first. */
  trail(...needles: string[]): string[];
}

/** Starts `node dist/local/start.js` and resolves once it printed its ready banner. */
export async function startLocalStack(env: Record<string, string>, timeoutMs = 120_000): Promise<RunningStack> {
  const home = mkdtempSync(join(tmpdir(), 'egress-e2e-'));
  let out = '';
  const child = spawn(process.execPath, ['dist/local/start.js'], {
    env: { ...process.env, EGRESS_HOME: home, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr?.on('data', (b: Buffer) => (out += b.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`stack not ready in ${timeoutMs} ms:\n${out}`)), timeoutMs);
    const poll = setInterval(() => {
      if (out.includes('Ctrl-C stops everything')) {
        clearInterval(poll);
        clearTimeout(timer);
        resolve();
      }
      if (child.exitCode !== null) {
        clearInterval(poll);
        clearTimeout(timer);
        reject(new Error(`stack exited with ${child.exitCode}:\n${out}`));
      }
    }, 200);
  });
  await ready.catch(async (err: unknown) => {
    // A stack that did not come up is stopped as Ctrl-C would (it stops what it started), so its
    // ports and processes do not outlive the file and break the next one; killed if that hangs.
    if (child.exitCode === null) {
      child.kill('SIGINT');
      const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
      await exited;
      clearTimeout(killer);
    }
    throw err;
  });
  const localEnv = () =>
    Object.fromEntries(
      readFileSync(join(home, 'local.env'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
    );
  const le = localEnv();
  process.env['FIRESTORE_EMULATOR_HOST'] = le['FIRESTORE_EMULATOR_HOST'];
  process.env['PUBSUB_EMULATOR_HOST'] = le['PUBSUB_EMULATOR_HOST'];
  process.env['METADATA_SERVER_DETECTION'] = 'none';
  const projectId = le['GOOGLE_CLOUD_PROJECT'] ?? 'demo-egress';
  return {
    process: child,
    home,
    output: () => out,
    localEnv,
    db: new Firestore({ projectId }),
    pubsub: new PubSub({ projectId }),
    async interrupt() {
      child.kill('SIGINT');
      return exited;
    },
    trail: (...needles) => logTrail(join(home, 'logs'), needles),
  };
}

/** The log lines under `dir` naming one of `needles`, sorted by their `time` (prefixed with the file). */
function logTrail(dir: string, needles: string[]): string[] {
  const lines: { time: string; text: string }[] = [];
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.log'))) {
    for (const line of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!needles.some((n) => line.includes(n))) continue;
      const time = /"time":"([^"]+)"/.exec(line)?.[1] ?? '';
      lines.push({ time, text: `${file}: ${line.slice(0, 600)}` });
    }
  }
  return lines.sort((a, b) => a.time.localeCompare(b.time)).map((l) => l.text);
}

/** PIDs of every process whose command line carries every one of `needles`. */
export function processesMatching(...needles: string[]): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (needles.every((n) => cmdline.includes(n))) pids.push(Number(entry));
    } catch {
      // the process ended while we looked
    }
  }
  return pids;
}

/** What one run of the CLI did. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * `egress <args>`: the built CLI as a child process, configured only by the stack's local.env
 * (EGRESS_HOME), as a new user would run it.
 */
export function cliOf(stack: () => RunningStack): (...args: string[]) => Promise<CliRun> {
  const run = promisify(execFile);
  const cli = join(process.cwd(), 'dist', 'cli', 'main.js');
  return async (...args) => {
    const env: NodeJS.ProcessEnv = { PATH: process.env['PATH'], HOME: process.env['HOME'], EGRESS_HOME: stack().home };
    try {
      const { stdout, stderr } = await run(cli, args, { cwd: process.cwd(), env, timeout: 170_000 });
      return { code: 0, stdout, stderr };
    } catch (err) {
      // execFile rejects on a non-zero exit with the code and both outputs on the error.
      const exited = z.object({ code: z.number(), stdout: z.string(), stderr: z.string() }).safeParse(err);
      if (!exited.success) throw err;
      return exited.data;
    }
  };
}
