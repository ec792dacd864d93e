/**
 * The fake kubelet's "container runtime": takes tinyproxy's config from the Pod's mounted Secret
 * and runs it in Debian's tinyproxy on the Pod's IP (`../guest-proxy.ts`); runs the Pod's init
 * containers' commands on this host, and its stunnel sidecar in Debian's stunnel.
 *
 * There are no images or mount namespaces here: a container's program is the test host's (`sh`,
 * `openssl`, Debian's `stunnel4` for the image's `stunnel`), an emptyDir volume is a directory of
 * the Pod's own on this host, and a path under a mount is read from (Secret) or rewritten to
 * (emptyDir) the volume it names.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { connect } from 'node:net';
import { join, posix } from 'node:path';
import { configuredPort, startGuestProxy, startGuestTls, stunnelSetting, type ListeningGuest } from '../guest-proxy.js';
import type { StoredPod, StoredSecret } from './store.js';

type Container = StoredPod['spec']['containers'][number];

/** The host directory of the Pod's emptyDir `volume` (one per Pod object: a new Pod starts empty). */
export function emptyDirOf(dir: string, pod: StoredPod, volume: string): string {
  return join(dir, 'volumes', pod.metadata.uid, volume);
}

/**
 * Where `path` inside `container` lives: the Secret key of a Secret volume mounted above it, or the
 * host path inside an emptyDir mounted above it; undefined when no mount covers it.
 */
export function mountedFile(
  pod: StoredPod,
  container: Container,
  path: string,
  dir: string,
): { secretName: string; key: string } | { hostPath: string } | undefined {
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.spec.volumes?.find((v) => v.name === mount.name);
    const rel = posix.relative(mount.mountPath, path);
    if (!volume || !rel || rel.startsWith('..')) continue;
    if (volume.secret) return { secretName: volume.secret.secretName, key: rel };
    if (Reflect.get(volume, 'emptyDir') !== undefined)
      return { hostPath: join(emptyDirOf(dir, pod, volume.name), rel) };
  }
  return undefined;
}

/** The container's argv with every emptyDir mount path rewritten to the volume's host directory. */
function hostArgv(pod: StoredPod, container: Container, dir: string): string[] {
  let argv = [...(container.command ?? [])];
  for (const mount of container.volumeMounts ?? []) {
    const volume = pod.spec.volumes?.find((v) => v.name === mount.name);
    if (!volume || Reflect.get(volume, 'emptyDir') === undefined) continue;
    const host = emptyDirOf(dir, pod, volume.name);
    mkdirSync(host, { recursive: true, mode: 0o700 });
    argv = argv.map((a) => a.split(mount.mountPath).join(host));
  }
  return argv;
}

/**
 * Runs one init container to completion: its command on this host, its emptyDir mounts rewritten
 * to the Pod's directories (https://kubernetes.io/docs/concepts/workloads/pods/init-containers/:
 * init containers run to completion, in order, before any app container starts).
 *
 * @returns undefined when it exited 0, else why it failed
 */
export function runInitContainer(pod: StoredPod, container: Container, dir: string): Promise<string | undefined> {
  const [program, ...args] = hostArgv(pod, container, dir);
  if (!program) return Promise.resolve(`init container ${container.name} has no command`);
  return new Promise((resolve) => {
    const child = spawn(program, args, { stdio: 'ignore', timeout: 30_000 });
    child.once('error', (e) => resolve(`init container ${container.name}: ${e.message}`));
    child.once('exit', (code, signal) =>
      resolve(code === 0 ? undefined : `init container ${container.name} exited (${signal ?? `code ${code ?? '?'}`})`),
    );
  });
}

/**
 * The stunnel sidecar's settings, read from the config file its command names (`stunnel <file>`)
 * in its mounted Secret: where it accepts (`port` or `host:port`), the proxy port it forwards to
 * over the Pod's loopback, and its certificate and key as host files in the Pod's emptyDir.
 *
 * @returns the settings, or why the container would exit
 */
export function tlsSidecarSettings(
  pod: StoredPod,
  container: Container,
  secretOf: (name: string) => StoredSecret | undefined,
  dir: string,
): { tlsPort: number; proxyPort: number; cert: string; key: string } | { error: string } {
  const [program, path] = container.command ?? [];
  if (program !== 'stunnel' || !path)
    return { error: `container ${container.name}: the fake runs only "stunnel <config>"` };
  const file = mountedFile(pod, container, path, dir);
  const secret = file && 'secretName' in file ? secretOf(file.secretName) : undefined;
  const data = file && 'key' in file ? secret?.data?.[file.key] : undefined;
  if (data === undefined) return { error: `open ${path}: no such file in a mounted secret` };
  const config = Buffer.from(data, 'base64').toString('utf8');
  const tlsPort = Number(/(?:^|:)(\d+)$/.exec(stunnelSetting(config, 'accept') ?? '')?.[1]);
  const connectTo = /^127\.0\.0\.1:(\d+)$/.exec(stunnelSetting(config, 'connect') ?? '');
  if (!Number.isInteger(tlsPort) || !connectTo?.[1])
    return { error: "stunnel.conf: no accept port, or connect is not the Pod's loopback" };
  const files = (['cert', 'key'] as const).map((k) => {
    const f = mountedFile(pod, container, stunnelSetting(config, k) ?? '', dir);
    return f && 'hostPath' in f ? f.hostPath : undefined;
  });
  const [cert, key] = files;
  if (!cert || !key) return { error: 'stunnel.conf: cert and key must be in a mounted emptyDir' };
  return { tlsPort, proxyPort: Number(connectTo[1]), cert, key };
}

/** Where the container's config file lives: the `-c <path>` argument inside a Secret volume mount. */
export function configSource(pod: StoredPod, dir: string): { secretName: string; key: string } | undefined {
  const container = pod.spec.containers[0];
  const command = container?.command ?? [];
  const path = command[command.indexOf('-c') + 1];
  if (!container || command.indexOf('-c') < 0 || !path) return undefined;
  const file = mountedFile(pod, container, path, dir);
  return file && 'secretName' in file ? file : undefined;
}

/**
 * The tinyproxy config stored under `key` of the Secret, as the product wrote it.
 *
 * @returns the config, or why the container would exit
 */
export function readConfig(secret: StoredSecret, key: string): { config: string } | { error: string } {
  const data = secret.data?.[key];
  if (data === undefined) return { error: `open ${key}: no such file in the mounted secret` };
  const config = Buffer.from(data, 'base64').toString('utf8');
  try {
    configuredPort(config);
  } catch (err) {
    return { error: `config: ${err instanceof Error ? err.message : String(err)}` };
  }
  return { config };
}

/** A running proxy process. */
export interface ProxyProcess {
  /** Resolves once it listens; rejects with its error if it cannot. */
  ready: Promise<void>;
  /** Resolves when it exited, for whatever reason (or never started). */
  exited: Promise<void>;
  /** Signals the process once it runs; a process that never started has nothing to signal. */
  kill(signal: NodeJS.Signals): void;
}

/**
 * Starts the Pod's tinyproxy with `config` on `host`.
 *
 * @param markers - extra argv entries that identify the process as this fake's
 * @param dir - where its config and log files go
 */
export function startProxy(name: string, host: string, config: string, markers: string[], dir: string): ProxyProcess {
  return supervised(startGuestProxy({ name, config, listen: host, markers, dir }));
}

/** Starts the Pod's stunnel sidecar on `host` with the settings its config file gave. */
export function startTlsSidecar(
  name: string,
  host: string,
  settings: { tlsPort: number; proxyPort: number; cert: string; key: string },
  markers: string[],
  dir: string,
): ProxyProcess {
  return supervised(startGuestTls({ name, listen: host, ...settings, markers, dir }));
}

/**
 * The Pod's app containers as one process: ready when every one is, exited when any one exits
 * (the others are then killed), signalled together. The fake restarts a Pod's containers
 * together; a real kubelet restarts only the one that exited.
 */
export function together(containers: ProxyProcess[]): ProxyProcess {
  const kill = (signal: NodeJS.Signals) => containers.forEach((c) => c.kill(signal));
  const exited = Promise.race(containers.map((c) => c.exited)).then(async () => {
    kill('SIGKILL');
    await Promise.all(containers.map((c) => c.exited));
  });
  const ready = Promise.all(containers.map((c) => c.ready)).then(() => undefined);
  ready.catch(() => kill('SIGKILL'));
  return { ready, exited, kill };
}

function supervised(starting: Promise<ListeningGuest>): ProxyProcess {
  let proxy: ListeningGuest | undefined;
  let killed: NodeJS.Signals | undefined;
  const started = starting.then((p) => {
    proxy = p;
    // Killed while it started: the signal is sent once there is a process to receive it.
    if (killed) p.kill(killed);
    return p;
  });
  const ready = started.then(() => undefined);
  // Only the first of ready/exit matters; the other outcome is expected to be ignored.
  ready.catch(() => undefined);
  return {
    ready,
    exited: started.then(
      (p) => p.exited,
      () => undefined,
    ),
    kill(signal) {
      killed = signal;
      proxy?.kill(signal);
    },
  };
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
