/** Child processes of the local stack: started with their output in a log file, stopped by PID. */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface Child {
  name: string;
  process: ChildProcess;
  logFile: string;
  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process has exited. */
  stop(graceMs?: number): Promise<void>;
}

/** Starts `node args…` with stdout and stderr appended to `logFile`. */
export function startChild(name: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): Child {
  const fd = openSync(logFile, 'a');
  const child = spawn(process.execPath, args, { env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    name,
    process: child,
    logFile,
    async stop(graceMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** Resolves once `host:port` accepts a TCP connection; rejects after `timeoutMs` or if `child` exits. */
export async function waitForPort(host: string, port: number, timeoutMs: number, child?: Child): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && child.process.exitCode !== null)
      throw new Error(`${child.name} exited with code ${child.process.exitCode}; see ${child.logFile}`);
    const open = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ host, port }, () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (open) return;
    await sleep(100);
  }
  throw new Error(`nothing listening on ${host}:${port} after ${timeoutMs} ms${child ? `; see ${child.logFile}` : ''}`);
}

/** True when nothing listens on `host:port`. */
export async function portFree(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host, port }, () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => resolve(true));
  });
}

/** A child kept running: started again after an exit nobody asked for. */
export interface Supervised {
  /** The process running now. */
  current(): Child;
  /** Stops it for good (no restart) and resolves once it has exited. */
  stop(): Promise<void>;
}

/**
 * Runs `start()` as systemd's `Restart=always` or Cloud Run's new instance would: when the child
 * exits without `stop()`, `onExit` is told and it is started again after `restartDelayMs`. Each
 * start writes the PID to `pidFile` (what `npm run chaos` and an operator kill).
 */
export function supervise(
  start: () => Child,
  pidFile: string,
  onExit: (code: number | null, signal: NodeJS.Signals | null) => void,
  restartDelayMs = 500,
): Supervised {
  let wanted = true;
  let child: Child;
  let timer: NodeJS.Timeout | undefined;
  const run = () => {
    child = start();
    writeFileSync(pidFile, `${child.process.pid ?? ''}\n`);
    child.process.once('exit', (code, signal) => {
      if (!wanted) return;
      onExit(code, signal);
      timer = setTimeout(() => wanted && run(), restartDelayMs);
    });
  };
  run();
  return {
    current: () => child,
    async stop() {
      wanted = false;
      clearTimeout(timer);
      await child.stop();
    },
  };
}
