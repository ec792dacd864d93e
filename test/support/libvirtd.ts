/** Starts a real, unprivileged libvirtd for tests (test driver + storage driver) and stops it by PID. */
import { execFile, spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { freePort } from '../../infra/local/emulators.js';
import { connect } from '../../relay/libvirt/index.js';

const run = promisify(execFile);
const NOBODY = 65534;
const DRIVER_DIR = '/usr/lib/x86_64-linux-gnu/libvirt/connection-driver';

/** Server-side TLS files (PEM); the daemon then also listens with TLS and requires a client certificate from `caFile`. */
export interface LibvirtdTls {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** Options of {@link startLibvirtd}. */
export interface LibvirtdOptions {
  /** The daemon's keepalive towards clients (libvirtd.conf `keepalive_interval`, seconds); default 5. */
  keepaliveIntervalS?: number;
  /** libvirtd.conf `keepalive_count`; default 5. */
  keepaliveCount?: number;
  /** Also listen with TLS (`qemu+tls`-style URIs in {@link Libvirtd.tlsPort}). */
  tls?: LibvirtdTls;
  /** Name of the `dir` storage pool created (transient, running) on the storage endpoint; default `egress`. */
  poolName?: string;
}

/** A running daemon. */
export interface Libvirtd {
  /** `test+tcp://127.0.0.1:PORT/default`: libvirt's test driver (fake domains, made-up interface addresses). */
  testUri: string;
  /** `test+unix:///default?socket=…`: the same driver over the unix socket. */
  testUnixUri: string;
  /**
   * `storage+unix:///session?socket=…`: the real storage driver, with the `dir` pool {@link poolName}
   * at {@link poolDir} (real qcow2 overlays with backing files, byte-exact uploads).
   */
  storageUri: string;
  /** `storage+tcp://127.0.0.1:PORT/session`: the storage driver over TCP. */
  storageTcpUri: string;
  /** The daemon's read-write unix socket, `<home>/libvirt/libvirt-sock`. */
  unixSocket: string;
  /**
   * The daemon's `XDG_RUNTIME_DIR` (owned by nobody): `virt-ssh-helper URI` run as nobody with this
   * `XDG_RUNTIME_DIR` finds the daemon's socket, as it would on an ssh host in session mode.
   */
  home: string;
  tcpPort: number;
  /** Set when started with `tls`. */
  tlsPort: number | undefined;
  poolName: string;
  /** The pool's directory. The daemon runs as `nobody`: files put here must be readable by uid 65534. */
  poolDir: string;
  /** The daemon's PID (for tests that kill it). */
  pid: number;
  /** The temp directory holding config, sockets, log and pool; removed by stop(). */
  dir: string;
  /** The daemon's log so far (for failure messages). */
  log(): Promise<string>;
  /** SIGTERM (SIGKILL after 5 s), waits for exit, removes the temp directory. Idempotent. */
  stop(): Promise<void>;
}

function config(dir: string, tcpPort: number, options: LibvirtdOptions, tlsPort: number | undefined): string {
  const lines = [
    'listen_tcp = 1',
    'listen_addr = "127.0.0.1"',
    `tcp_port = "${tcpPort}"`,
    'auth_tcp = "none"',
    'auth_unix_rw = "none"',
    `unix_sock_dir = "${join(dir, 'home', 'libvirt')}"`,
    `keepalive_interval = ${options.keepaliveIntervalS ?? 5}`,
    `keepalive_count = ${options.keepaliveCount ?? 5}`,
  ];
  if (options.tls && tlsPort !== undefined) {
    lines.push(
      'listen_tls = 1',
      `tls_port = "${tlsPort}"`,
      'auth_tls = "none"',
      `ca_file = "${options.tls.caFile}"`,
      `cert_file = "${options.tls.certFile}"`,
      `key_file = "${options.tls.keyFile}"`,
    );
  } else {
    lines.push('listen_tls = 0');
  }
  return `${lines.join('\n')}\n`;
}

/** Resolves once a client can open the test driver and the storage endpoint has its pool; rejects if the daemon exits. */
async function waitUntilAnswering(daemon: Libvirtd, exited: Promise<unknown>): Promise<void> {
  let gone = false;
  void exited.then(() => (gone = true));
  const deadline = Date.now() + 15_000;
  for (;;) {
    if (gone) throw new Error(`libvirtd exited during start-up:\n${await daemon.log()}`);
    try {
      const conn = await connect(daemon.storageUri, { timeoutMs: 2_000, keepalive: false });
      await conn.getLibVersion();
      await conn.close();
      return;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`libvirtd did not answer: ${String(error)}\n${await daemon.log()}`);
      await sleep(100);
    }
  }
}

/**
 * Starts libvirtd as user `nobody` (started as root with the default drivers it dies on the QEMU
 * driver: "Failed to parse user 'libvirt-qemu'") in a fresh temp directory, listening on a unix
 * socket and a free loopback TCP port without authentication. `LIBVIRT_DRIVER_DIR` holds only the
 * storage driver, so the daemon serves the built-in test driver plus real storage. Needs root
 * (for setpriv) and the Debian packages libvirt-daemon, libvirt-clients.
 *
 * @example
 * const daemon = await startLibvirtd();
 * const conn = await connect(daemon.testUri); // hold it: test:///default state lives while a connection is open
 * …
 * await conn.close();
 * await daemon.stop();
 */
export async function startLibvirtd(options: LibvirtdOptions = {}): Promise<Libvirtd> {
  const dir = await mkdtemp(join(tmpdir(), 'libvirtd-'));
  await chmod(dir, 0o755);
  for (const sub of ['run', 'home/libvirt', 'drv', 'pool']) await mkdir(join(dir, sub), { recursive: true });
  await symlink(join(DRIVER_DIR, 'libvirt_driver_storage.so'), join(dir, 'drv', 'libvirt_driver_storage.so'));
  const tcpPort = await freePort();
  let tlsPort: number | undefined;
  if (options.tls) while ((tlsPort = await freePort()) === tcpPort);
  const confFile = join(dir, 'libvirtd.conf');
  await writeFile(confFile, config(dir, tcpPort, options, tlsPort));
  await run('chown', ['-R', `${NOBODY}:${NOBODY}`, dir]);
  for (const file of options.tls ? [options.tls.certFile, options.tls.keyFile] : []) await chown(file, NOBODY, NOBODY);

  const home = join(dir, 'home');
  const logFile = join(dir, 'libvirtd.log');
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    HOME: home,
    XDG_RUNTIME_DIR: home,
    XDG_CONFIG_HOME: home,
    XDG_CACHE_HOME: home,
    LIBVIRT_DRIVER_DIR: join(dir, 'drv'),
    LIBVIRT_LOG_OUTPUTS: `3:file:${logFile}`,
  };
  const pidFile = join(dir, 'run', 'libvirtd.pid');
  const args = [
    '--reuid=65534',
    '--regid=65534',
    '--clear-groups',
    'libvirtd',
    '--listen',
    '-f',
    confFile,
    '-p',
    pidFile,
  ];
  // setpriv execs libvirtd, so the child's PID is the daemon's.
  const child = spawn('setpriv', args, { env, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const pid = child.pid;
  if (pid === undefined) throw new Error('could not spawn setpriv libvirtd');
  const killOnExit = (): void => void child.kill('SIGKILL');
  process.once('exit', killOnExit);

  const poolName = options.poolName ?? 'egress';
  // Where a session-mode client (virt-ssh-helper run with XDG_RUNTIME_DIR=home) looks for it.
  const unixSocket = join(home, 'libvirt', 'libvirt-sock');
  let stopped: Promise<void> | undefined;
  const daemon: Libvirtd = {
    testUri: `test+tcp://127.0.0.1:${tcpPort}/default`,
    testUnixUri: `test+unix:///default?socket=${unixSocket}`,
    storageUri: `storage+unix:///session?socket=${unixSocket}`,
    storageTcpUri: `storage+tcp://127.0.0.1:${tcpPort}/session`,
    unixSocket,
    home,
    tcpPort,
    tlsPort,
    poolName,
    poolDir: join(dir, 'pool'),
    pid,
    dir,
    log: () => readFile(logFile, 'utf8').catch(() => '(no log)'),
    stop: () =>
      (stopped ??= (async () => {
        process.off('exit', killOnExit);
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
          await exited;
          clearTimeout(timer);
        }
        await rm(dir, { recursive: true, force: true });
      })()),
  };
  try {
    await waitUntilAnswering(daemon, exited);
    await run('virsh', ['-c', daemon.storageUri, 'pool-create-as', poolName, 'dir', '--target', daemon.poolDir]);
  } catch (error) {
    await daemon.stop();
    throw error;
  }
  return daemon;
}
