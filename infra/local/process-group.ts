/**
 * Long-running helper processes (the emulators' JVMs) in process groups of their own: started
 * with their output in a log file, stopped group-wide (SIGTERM, then SIGKILL), and killed
 * synchronously if this process exits without stopping them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const STOP_GRACE_MS = 5_000;

export interface Child {
  name: string;
  pid: number;
  logFile: string;
  /** Set once the leader process has exited (and been reaped). */
  exit: string | undefined;
}

/** Process groups still running, killed synchronously if this process exits without `stop()`. */
const liveGroups = new Set<number>();
let exitHookInstalled = false;

/** Starts `command` as the leader of a new process group, its stdout and stderr in `logFile`. */
export function launch(
  name: string,
  command: string,
  args: string[],
  logFile: string,
  env: NodeJS.ProcessEnv = process.env,
): Child {
  const fd = openSync(logFile, 'w');
  let proc: ChildProcess;
  try {
    // Own process group, so stop() can signal the launcher and anything it started at once.
    proc = spawn(command, args, { detached: true, env, stdio: ['ignore', fd, fd] });
  } finally {
    closeSync(fd);
  }
  if (proc.pid === undefined) throw new Error(`${name}: could not start ${command}`);
  const child: Child = { name, pid: proc.pid, logFile, exit: undefined };
  liveGroups.add(child.pid);
  installExitHook();
  proc.once('exit', (code, signal) => {
    child.exit = signal ? `signal ${signal}` : `code ${code ?? '?'}`;
  });
  proc.once('error', (err) => {
    child.exit = `error ${err.message}`;
  });
  return child;
}

/** Stops every child's whole group: SIGTERM, then SIGKILL after a grace period. @throws when a group survives SIGKILL */
export async function stopAll(children: Child[]): Promise<void> {
  const results = await Promise.allSettled(children.map((child) => stopChild(child)));
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

async function stopChild(child: Child): Promise<void> {
  signalGroup(child.pid, 'SIGTERM');
  if (await waitGone(child, STOP_GRACE_MS)) return;
  signalGroup(child.pid, 'SIGKILL');
  if (await waitGone(child, STOP_GRACE_MS)) return;
  throw new Error(`${child.name} (process group ${child.pid}) survived SIGKILL`);
}

async function waitGone(child: Child, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    // The leader must be reaped first: a zombie leader still counts as a group member.
    if (child.exit !== undefined && !groupAlive(child.pid)) {
      liveGroups.delete(child.pid);
      return true;
    }
    if (Date.now() >= deadline) return false;
    await sleep(50);
  }
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if (errnoCode(err) !== 'ESRCH') throw err;
  }
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    return errnoCode(err) === 'EPERM';
  }
}

function errnoCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort for a crash or a forgotten stop(): no JVM may outlive us.
  process.on('exit', () => {
    for (const pgid of liveGroups) signalGroup(pgid, 'SIGKILL');
  });
}

/** The last lines of a child's log, for an error message. */
export function logTail(child: Child, lines = 20): string {
  try {
    const text = readFileSync(child.logFile, 'utf8').trimEnd();
    const tail = text.split('\n').slice(-lines).join('\n');
    return tail ? `; last lines of ${child.logFile}:\n${tail}` : `; ${child.logFile} is empty`;
  } catch {
    return `; no log at ${child.logFile}`;
  }
}
