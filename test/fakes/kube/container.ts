/**
 * The fake kubelet's "container runtime": reads tinyproxy's config from the Pod's mounted Secret
 * and runs the project's real proxy process with that port and those credentials on the Pod's IP.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { connect } from 'node:net';
import { posix } from 'node:path';
import { createInterface } from 'node:readline';
import { readyLineSchema } from '../../../relay/backends/process/proxy-config.js';
import type { StoredPod, StoredSecret } from './store.js';

/** What the container's config file says (tinyproxy syntax: `Port`, `BasicAuth`). */
export interface ProxyConfig {
  port: number;
  username: string;
  password: string;
}

/** Where the container's config file lives: the `-c <path>` argument inside a Secret volume mount. */
export function configSource(pod: StoredPod): { secretName: string; key: string } | undefined {
  const container = pod.spec.containers[0];
  const command = container?.command ?? [];
  const path = command[command.indexOf('-c') + 1];
  if (!container || command.indexOf('-c') < 0 || !path) return undefined;
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.spec.volumes?.find((v) => v.name === mount.name);
    const rel = posix.relative(mount.mountPath, path);
    if (volume?.secret && rel && !rel.startsWith('..')) return { secretName: volume.secret.secretName, key: rel };
  }
  return undefined;
}

/**
 * Parses the tinyproxy config stored under `key` of the Secret.
 *
 * @returns the config, or why the container would exit
 */
export function readConfig(secret: StoredSecret, key: string): ProxyConfig | string {
  const data = secret.data?.[key];
  if (data === undefined) return `open ${key}: no such file in the mounted secret`;
  const text = Buffer.from(data, 'base64').toString('utf8');
  let port: number | undefined;
  let auth: [string, string] | undefined;
  for (const line of text.split('\n')) {
    const [directive, ...args] = line.trim().split(/\s+/);
    if (directive === 'Port') port = Number(args[0]);
    if (directive === 'BasicAuth' && args.length === 2 && args[0] && args[1]) auth = [args[0], args[1]];
  }
  if (!port || !Number.isInteger(port)) return 'config: missing or invalid Port';
  if (!auth) return 'config: no BasicAuth line (the fake refuses to run an open proxy)';
  return { port, username: auth[0], password: auth[1] };
}

/** A running proxy process. */
export interface ProxyProcess {
  child: ChildProcess;
  /** Resolves once it listens; rejects with its error if it cannot. */
  ready: Promise<void>;
  /** Resolves when it exited, for whatever reason. */
  exited: Promise<void>;
}

/**
 * Starts the real proxy (`relay/backends/process/proxy-server.ts`, bundled) on `host:port`.
 *
 * @param markers - extra argv entries that identify the process as this fake's
 */
export function startProxy(
  serverPath: string,
  name: string,
  host: string,
  config: ProxyConfig,
  markers: string[],
): ProxyProcess {
  const child = spawn(process.execPath, [serverPath, `--egress-proxy=${name}`, ...markers], {
    stdio: ['pipe', 'pipe', 'ignore'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stdout = child.stdout;
  const ready = new Promise<void>((resolve, reject) => {
    if (!stdout) return reject(new Error('no stdout'));
    const lines = createInterface({ input: stdout });
    lines.once('line', (line) => {
      let json: unknown;
      try {
        json = JSON.parse(line);
      } catch {
        json = undefined;
      }
      const parsed = readyLineSchema.safeParse(json);
      if (parsed.success && parsed.data.ready) resolve();
      else reject(new Error(parsed.success && !parsed.data.ready ? parsed.data.error : `unexpected output: ${line}`));
    });
    child.once('exit', (code) => reject(new Error(`proxy exited with ${code}`)));
  });
  // Only the first of ready/exit matters; the other outcome is expected to be ignored.
  ready.catch(() => undefined);
  child.stdin?.end(JSON.stringify({ name, host, ...config }));
  return { child, ready, exited };
}

/** A TCP readiness probe: does anything accept connections on `host:port`? */
export function tcpProbe(host: string, port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
