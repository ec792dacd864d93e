/** tinyproxy processes of the process backend (proxies and forwarders): their config files, their start, their readiness. */
import { spawn } from 'node:child_process';
import { closeSync, existsSync, openSync, readSync } from 'node:fs';
import { appendFile, chown, open, readdir, readlink } from 'node:fs/promises';
import net from 'node:net';
import { connectPortLines, type EgressPolicy } from '../../../shared/config/egress-policy.js';
import { RetryableError } from '../../../shared/errors.js';
import { basicAuthDirective } from '../../../shared/providers/tinyproxy.js';
import { writeFileAtomic } from '../../atomic-file.js';
import type { RunAs } from './fence.js';

/** Debian's tinyproxy (package `tinyproxy-bin`), the proxy software of the guests too. */
export const TINYPROXY_PATH = '/usr/bin/tinyproxy';

/** tinyproxy's exit status when it cannot create its listening socket (sysexits `EX_OSERR`). */
const EXIT_NO_LISTENER = 71;

const HAS_PROC_NET = existsSync('/proc/self/net/tcp');
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** The process could not listen because its port is taken (by something that is not ours). */
export class PortInUseError extends Error {}

/** An address tinyproxy listens on or connects to. */
export interface HostPort {
  host: string;
  port: number;
}

/** What one proxy serves. */
export interface ProxyConfig extends HostPort {
  credentials: { username: string; password: string };
  /** Source address of its outgoing connections (its egress IP); absent: the OS picks. */
  source?: string | undefined;
  /**
   * The forwarder that carries what is not for this host (a loopback `source` reaches nothing
   * else); loopback targets are still reached directly, from `source`.
   */
  upstream?: HostPort | undefined;
  /** Its provider's egress policy: CONNECT only to its ports (the kernel fence covers the rest). */
  egress: EgressPolicy;
  /** Connections served at once (tinyproxy's `MaxClients`; default 200); more wait to be accepted. */
  maxClients?: number | undefined;
}

/**
 * The tinyproxy configuration of one proxy: listen on `host:port` only, Basic auth required (407
 * without credentials, 401 with wrong ones), no Via header, logs on stderr (run with `-d`).
 * tinyproxy tries its site-specific `Upstream` rules before the default one, whatever their order.
 * `ConnectPort` lines limit CONNECT to the policy's ports, a second layer beside the kernel fence
 * (`fence.ts`); the `Upstream` rules match names as written, so they route, never fence.
 *
 * @throws PermanentError naming `credentials.username` or `credentials.password` when tinyproxy
 *   could not parse the value
 */
export function tinyproxyConfig(config: ProxyConfig): string {
  const { upstream } = config;
  return [
    `Port ${config.port}`,
    `Listen ${config.host}`,
    'Timeout 600',
    `MaxClients ${config.maxClients ?? 200}`,
    'LogLevel Warning',
    'DisableViaHeader Yes',
    basicAuthDirective(config.credentials),
    ...connectPortLines(config.egress),
    ...(config.source !== undefined ? [`Bind ${config.source}`] : []),
    ...(upstream !== undefined
      ? [`Upstream http ${upstream.host}:${upstream.port}`, 'Upstream none "127.0.0.0/8"', 'Upstream none "localhost"']
      : []),
    '',
  ].join('\n');
}

/**
 * The tinyproxy configuration of a forwarder: no auth and no `Bind` (it connects from the host's
 * own address), listening on a loopback `host:port` and serving loopback clients only, CONNECT
 * only to the policy's ports.
 */
export function forwarderConfig(listen: HostPort, egress: EgressPolicy): string {
  return [
    `Port ${listen.port}`,
    `Listen ${listen.host}`,
    'Timeout 600',
    // It carries the traffic of every proxy of its backend.
    'MaxClients 1000',
    'LogLevel Warning',
    'DisableViaHeader Yes',
    'Allow 127.0.0.0/8',
    ...connectPortLines(egress),
    '',
  ].join('\n');
}

/** How to start one tinyproxy process (or the stunnel in front of one: `argv`). */
export interface SpawnOptions {
  /** The executable: tinyproxy, or stunnel with `argv`. */
  program: string;
  /** Its arguments around the config file's path (default tinyproxy's: `-d -c <config> -- <markers>`). */
  argv?: ((config: string, markers: readonly string[]) => string[]) | undefined;
  markers: readonly string[];
  /** Its configuration file (`tinyproxyConfig`, `forwarderConfig`, or stunnel's). */
  config: string;
  /** Where that configuration makes it listen: it is ready once it does. */
  listen: HostPort;
  /** Where its config file goes (mode 0600: it may hold a password). */
  configPath: string;
  /** Its stdout and stderr are appended here. */
  logPath: string;
  /** How long to wait until it listens. */
  timeoutMs: number;
  /** The user it runs as (the relay must be root); absent: the relay's own. */
  runAs?: RunAs | undefined;
}

/**
 * Starts a detached tinyproxy in the foreground (`-d`) and waits until it listens on its port.
 * The markers follow `--`, where tinyproxy ignores them, so they stay in its argv. The process is
 * unref'd, so it outlives the relay.
 *
 * @param onSpawned - called with the pid as soon as the process exists (before it is ready), so
 *   the caller can record it and never lose track of a process it started
 * @returns the pid
 * @throws PortInUseError when the port is taken; RetryableError for other start failures
 */
export async function spawnTinyproxy(opts: SpawnOptions, onSpawned: (pid: number) => Promise<void>): Promise<number> {
  return (await startTinyproxy(opts, onSpawned)).pid;
}

/** A tinyproxy that listens. */
export interface TinyproxyProcess {
  pid: number;
  /** Resolves when it exits, while this process still runs (the wire fakes restart or report it). */
  exited: Promise<void>;
}

/** {@link spawnTinyproxy}, with a promise of the process's exit beside its pid. */
export async function startTinyproxy(
  opts: SpawnOptions,
  onSpawned: (pid: number) => Promise<void>,
): Promise<TinyproxyProcess> {
  await writeFileAtomic(opts.configPath, opts.config);
  // A proxy of its own user cannot walk the state directory (0700): it gets the file, still 0600
  // and now its own, as descriptor 3, which /proc/self/fd/3 opens without walking a directory.
  if (opts.runAs) await chown(opts.configPath, opts.runAs.uid, opts.runAs.gid);
  const config = opts.runAs ? await open(opts.configPath, 'r') : undefined;
  const log = await open(opts.logPath, 'a', 0o600);
  let exited: string | undefined;
  let portTaken = false;
  let child: ReturnType<typeof spawn>;
  const onExit = (code: number | null, sig: NodeJS.Signals | null) => {
    portTaken = code === EXIT_NO_LISTENER;
    exited = `exited (${sig ?? `code ${code ?? '?'}`}) before it was ready`;
  };
  try {
    const configArg = config ? '/proc/self/fd/3' : opts.configPath;
    const argv = opts.argv ?? ((path, markers) => ['-d', '-c', path, '--', ...markers]);
    child = spawn(opts.program, argv(configArg, opts.markers), {
      detached: true,
      stdio: ['ignore', log.fd, log.fd, ...(config ? [config.fd] : [])],
      cwd: '/',
      ...(opts.runAs ? { uid: opts.runAs.uid, gid: opts.runAs.gid } : {}),
    });
    // Listen at once: a spawn error is emitted on the next tick.
    child.on('error', (e) => (exited ??= `cannot start: ${e.message}`));
    child.once('exit', onExit);
    child.unref();
  } finally {
    await log.close();
    await config?.close();
  }
  const { pid } = child;
  try {
    if (pid === undefined) {
      const reason = `${opts.program}: ${await exitReason(() => exited)}`;
      await appendFile(opts.logPath, `${reason}\n`);
      throw new RetryableError(`proxy process failed to start: ${reason} (log: ${opts.logPath})`);
    }
    await onSpawned(pid);
    const gone = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
    const deadline = Date.now() + opts.timeoutMs;
    while (exited === undefined && Date.now() < deadline) {
      if (await listens(pid, opts.listen.host, opts.listen.port)) return { pid, exited: gone };
      await sleep(5);
    }
    // ChildProcess.kill is a no-op once the child has exited, so a recycled pid is never hit.
    child.kill('SIGKILL');
    if (portTaken) throw new PortInUseError(`port ${opts.listen.port} is in use on ${opts.listen.host}`);
    const error = exited ?? `not ready after ${opts.timeoutMs} ms`;
    throw new RetryableError(`proxy process failed to start: ${error} (log: ${opts.logPath})`);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  } finally {
    child.removeListener('exit', onExit);
  }
}

/** Waits briefly for the spawn error of a process that got no pid. */
async function exitReason(reason: () => string | undefined): Promise<string> {
  for (let i = 0; i < 100 && reason() === undefined; i++) await sleep(10);
  return reason() ?? 'no pid';
}

/**
 * True when `pid` itself holds a socket listening on `port` (Linux: its socket fds against the
 * LISTEN rows of `/proc/<pid>/net/tcp*`), so a foreign listener on the port never counts as our proxy being
 * ready. Elsewhere: a TCP connect to `host:port` succeeds.
 */
export async function listens(pid: number, host: string, port: number): Promise<boolean> {
  if (!HAS_PROC_NET) return connects(host, port);
  // Its fds first (cheap): the tables list every socket of the host, which is slow with many.
  const fds = await readdir(`/proc/${pid}/fd`).catch(() => []);
  const links = await Promise.all(fds.map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')));
  const sockets = new Set(links.flatMap((l) => /^socket:\[(\d+)\]$/.exec(l)?.[1] ?? []));
  if (sockets.size === 0) return false;
  const hexPort = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return ['tcp', 'tcp6'].some((table) =>
    listeningRows(`/proc/${pid}/net/${table}`).some(
      // local_address is column 1, inode column 9.
      (cols) => cols[1]?.endsWith(hexPort) === true && sockets.has(cols[9] ?? ''),
    ),
  );
}

const TABLE_CHUNK = 64 * 1024;
const LISTEN = '0A';

/**
 * The LISTEN rows of a `/proc/net/tcp*` table, split into columns; none when it cannot be read.
 * The kernel writes the listening sockets before all others and makes the text as it is read, so
 * the read stops at the first other row: a whole table costs the kernel ~1.5 µs a row, and a host
 * that probes its proxies keeps thousands of connections in TIME_WAIT (9,000 rows: 25 ms a read,
 * several reads per start). Synchronous: a few chunks, each made in well under a millisecond.
 */
export function listeningRows(file: string): string[][] {
  let fd: number;
  try {
    fd = openSync(file, 'r');
  } catch {
    return [];
  }
  const rows: string[][] = [];
  try {
    const buffer = Buffer.alloc(TABLE_CHUNK);
    let rest = '';
    let header = true;
    for (;;) {
      const n = readSync(fd, buffer, 0, TABLE_CHUNK, null);
      const lines = (rest + buffer.toString('latin1', 0, n)).split('\n');
      // An incomplete last line waits for the next chunk; at the end there is none.
      rest = n === 0 ? '' : (lines.pop() ?? '');
      for (const line of lines) {
        if (header || line.trim() === '') {
          header = false;
          continue;
        }
        const cols = line.trim().split(/\s+/);
        // st, column 3.
        if (cols[3] !== LISTEN) return rows;
        rows.push(cols);
      }
      if (n === 0) return rows;
    }
  } catch {
    return rows;
  } finally {
    closeSync(fd);
  }
}

function connects(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    socket.once('connect', () => resolve(true));
    socket.once('error', () => resolve(false));
    socket.setTimeout(1000, () => socket.destroy(new Error('timeout')));
    socket.once('close', () => resolve(false));
  });
}
