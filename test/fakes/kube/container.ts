/**
 * The fake kubelet's "container runtime": takes tinyproxy's config from the Pod's mounted Secret
 * and runs it in Debian's tinyproxy on the Pod's IP (`../guest-proxy.ts`).
 */
import { connect } from 'node:net';
import { posix } from 'node:path';
import { configuredPort, startGuestProxy, type GuestProxy } from '../guest-proxy.js';
import type { StoredPod, StoredSecret } from './store.js';

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
  let proxy: GuestProxy | undefined;
  let killed: NodeJS.Signals | undefined;
  const started = startGuestProxy({ name, config, listen: host, markers, dir }).then((p) => {
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
