/**
 * The TLS listener of one process-backend instance: stunnel (Debian's `stunnel4`) in front of its
 * tinyproxy, on the same address, with a self-signed certificate this host makes for it (the key
 * stays in the state directory, mode 0600).
 */
import { execFile } from 'node:child_process';
import { access } from 'node:fs/promises';
import { promisify } from 'node:util';
import { RetryableError } from '../../../shared/errors.js';
import { certificateArgs, stunnelConfig } from '../../../shared/providers/stunnel.js';
import type { RunAs } from './fence.js';
import { stateMarker } from './proxy-config.js';
import type { StateStore } from './state.js';
import { spawnTinyproxy, type HostPort } from './tinyproxy.js';

const execFileAsync = promisify(execFile);

/** Debian's stunnel (package `stunnel4`). */
export const STUNNEL_PATH = '/usr/bin/stunnel4';

/** The argv markers of an instance's stunnel (it ignores arguments after its config file). */
export function tlsMarkers(name: string, stateDir: string): [string, string] {
  return [`--egress-tls=${name}`, stateMarker(stateDir)];
}

/** How to start one instance's listener. */
export interface TlsListenerOptions {
  name: string;
  store: StateStore;
  /** Where it accepts TLS (the proxy's host, its own port). */
  listen: HostPort;
  /** The proxy it forwards to. */
  proxy: HostPort;
  stunnelPath: string;
  timeoutMs: number;
  /**
   * The proxies' fenced user: the listener must not run as it (the fence keeps that user off this
   * host's own addresses, the proxy's among them), so with one the listener drops to `nobody`.
   */
  runAs?: RunAs | undefined;
}

/**
 * Makes the instance's certificate unless it has one (a restarted instance keeps the one its
 * clients pinned), then starts stunnel and waits until it listens.
 *
 * @param onSpawned - called with the pid as soon as the process exists
 * @returns the pid
 * @throws PortInUseError or RetryableError, as `spawnTinyproxy`
 */
export async function startTlsListener(
  opts: TlsListenerOptions,
  onSpawned: (pid: number) => Promise<void>,
): Promise<number> {
  const files = opts.store.tlsPaths(opts.name);
  await ensureCertificate(files.cert, files.key);
  const config = stunnelConfig({
    accept: `${opts.listen.host}:${opts.listen.port}`,
    connect: `${opts.proxy.host}:${opts.proxy.port}`,
    cert: files.cert,
    key: files.key,
    ...(opts.runAs && { user: { user: 'nobody', group: 'nogroup' } }),
  });
  return spawnTinyproxy(
    {
      program: opts.stunnelPath,
      argv: (path, markers) => [path, ...markers],
      markers: tlsMarkers(opts.name, opts.store.root),
      config,
      listen: opts.listen,
      configPath: files.conf,
      logPath: files.log,
      timeoutMs: opts.timeoutMs,
    },
    onSpawned,
  );
}

/** A fresh P-256 key and self-signed certificate at `cert`/`key`, unless the key exists. */
async function ensureCertificate(cert: string, key: string): Promise<void> {
  if (
    await access(key).then(
      () => true,
      () => false,
    )
  )
    return;
  // openssl writes a private key owner-only (0600), inside the 0700 state directory.
  try {
    await execFileAsync('openssl', certificateArgs(cert, key), { timeout: 30_000 });
  } catch (err) {
    throw new RetryableError(`cannot make the TLS certificate: ${String(err)}`, 5000, { cause: err });
  }
}
