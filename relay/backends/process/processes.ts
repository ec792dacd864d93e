/** OS processes of the process backend: recognising ours by marker, stopping them. */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);
const HAS_PROC = existsSync('/proc/self/cmdline');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * The argv of a live process, or `undefined` when there is none (zombies have an empty one).
 * Uses `/proc/<pid>/cmdline` on Linux and `ps` elsewhere. The read is synchronous: the kernel
 * answers it from memory in microseconds, where the promise API cost ten times that in thread-pool
 * hand-offs, and every listing reads two per instance.
 */
export async function readArgv(pid: number): Promise<string[] | undefined> {
  if (HAS_PROC) {
    try {
      const raw = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      const args = raw.split('\0').filter((a) => a !== '');
      return args.length > 0 ? args : undefined;
    } catch {
      return undefined;
    }
  }
  try {
    const { stdout } = await execFileAsync('ps', ['-ww', '-p', String(pid), '-o', 'args=']);
    const args = stdout
      .trim()
      .split(/\s+/)
      .filter((a) => a !== '');
    return args.length > 0 ? args : undefined;
  } catch {
    return undefined;
  }
}

/** True when `pid` is alive and carries every marker argument (a recycled pid does not). */
export async function isOurs(pid: number, markers: readonly string[]): Promise<boolean> {
  const argv = await readArgv(pid);
  return argv !== undefined && markers.every((m) => argv.includes(m));
}

/** Live processes carrying every marker, with their argv (Linux only; elsewhere none are found). */
export async function processesWith(markers: readonly string[]): Promise<Array<{ pid: number; argv: string[] }>> {
  if (!HAS_PROC) return [];
  const entries = await readdir('/proc').catch(() => []);
  const pids = entries
    .filter((e) => /^\d+$/.test(e))
    .map(Number)
    .filter((p) => p !== process.pid);
  const found = await Promise.all(pids.map(async (pid) => ({ pid, argv: await readArgv(pid) })));
  return found.flatMap(({ pid, argv }) => (argv && markers.every((m) => argv.includes(m)) ? [{ pid, argv }] : []));
}

/**
 * The processes of one state directory that were running when first asked, handed out once per
 * instance. Every process a backend starts is recorded before it is ready, so only those of an
 * earlier run whose state file was lost can be unrecorded: one scan of /proc finds them all (a
 * scan per start made N starts cost N × every process on the host).
 */
export class LeftoverProcesses {
  private byMarker: Promise<Map<string, number[]>> | undefined;

  /** @param stateMarker - the marker every process of the directory carries (`--egress-state=<dir>`) */
  constructor(private readonly stateMarker: string) {}

  /** @returns the pids carrying `marker` (`--egress-proxy=<name>`) at the first call, once */
  async take(marker: string): Promise<number[]> {
    this.byMarker ??= processesWith([this.stateMarker]).then((found) => {
      const byMarker = new Map<string, number[]>();
      for (const { pid, argv } of found) for (const arg of argv) byMarker.set(arg, [...(byMarker.get(arg) ?? []), pid]);
      return byMarker;
    });
    const byMarker = await this.byMarker;
    const pids = byMarker.get(marker) ?? [];
    byMarker.delete(marker);
    return pids;
  }
}

/** Pids of live processes carrying every marker (Linux only; elsewhere none are found). */
export async function findByMarkers(markers: readonly string[]): Promise<number[]> {
  return (await processesWith(markers)).map((p) => p.pid);
}

/**
 * Where a process that was ours stands: `running` (alive with our markers), `exiting`, or `gone`
 * (no such pid, a zombie, or the pid now belongs to another program).
 *
 * `exiting` is the kernel's window after a kill in which the process has released its memory (so
 * its argv reads empty and {@link isOurs} says false) but not yet its file descriptors, which go
 * with its last thread: the main thread of a Node process shows as a zombie while its worker
 * threads still exit, and its listening socket still holds the port. Linux only; elsewhere a
 * process without argv counts as gone.
 */
export async function exitState(pid: number, markers: readonly string[]): Promise<'running' | 'exiting' | 'gone'> {
  const argv = await readArgv(pid);
  if (argv !== undefined) return markers.every((m) => argv.includes(m)) ? 'running' : 'gone';
  if (!HAS_PROC) return 'gone';
  const tasks = await readdir(`/proc/${pid}/task`).catch(() => []);
  const states = await Promise.all(tasks.map((tid) => taskState(pid, tid)));
  return states.some((state) => state !== undefined && state !== 'Z' && state !== 'X') ? 'exiting' : 'gone';
}

/** The state letter of one thread, or `undefined` when it is gone. */
async function taskState(pid: number, tid: string): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => undefined);
  // The state follows the command name, which is in parentheses and may contain any byte.
  return stat?.charAt(stat.lastIndexOf(')') + 2);
}

/**
 * Waits until a process that is no longer ours has finished exiting, so that its port is free
 * again; bounded by `timeoutMs` (then the caller's bind reports the port as taken).
 */
export async function awaitExit(pid: number, markers: readonly string[], timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await exitState(pid, markers)) === 'exiting' && Date.now() < deadline) await sleep(10);
}

/**
 * Stops one of our processes: SIGTERM, then SIGKILL after `graceMs` if it still runs, and waits
 * until it has released its port.
 * Does nothing when `pid` is not ours (any more).
 *
 * @returns true when a process of ours was found and signalled
 */
export async function terminate(pid: number, markers: readonly string[], graceMs = 2000): Promise<boolean> {
  if (!(await isOurs(pid, markers))) return false;
  signal(pid, 'SIGTERM');
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline) {
    await sleep(50);
    if (!(await isOurs(pid, markers))) {
      await awaitExit(pid, markers);
      return true;
    }
  }
  signal(pid, 'SIGKILL');
  for (let i = 0; i < 40 && (await isOurs(pid, markers)); i++) await sleep(25);
  await awaitExit(pid, markers);
  return true;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // Already gone: that is the goal.
  }
}
