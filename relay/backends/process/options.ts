/** The process backend's options, its placement rule and its health check. */
import { access, constants, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { ValidationError } from '../../../shared/errors.js';
import type { EgressPolicy } from '../../../shared/config/egress-policy.js';
import type { Logger } from '../../../shared/logger.js';
import type { ProviderHealth } from '../../../shared/providers/contract.js';
import type { RunAs } from './fence.js';
import type { Forwarder } from './forwarder.js';
import type { StateStore } from './state.js';
import { TINYPROXY_PATH } from './tinyproxy.js';
import { STUNNEL_PATH } from './tls-listener.js';

/** How a process backend is set up (one per configured `process` provider on a relay). */
export interface ProcessBackendOptions {
  /** The provider name this backend serves. */
  provider: string;
  /** This installation's id: `list` returns only instances carrying it. */
  installationId: string;
  /**
   * Where instance state (`instances/<name>.json`, mode 0600) and logs (`logs/<name>.log`) live.
   * Several process backends may share one directory: records carry their provider, and ports are
   * allocated across all of them.
   */
  stateDir: string;
  /** Addresses a proxy may listen on; the first is the default placement. */
  bindAddresses: readonly string[];
  /** Inclusive port range for proxies. */
  portRange: readonly [number, number];
  /** The tinyproxy executable (default `/usr/bin/tinyproxy`, Debian package `tinyproxy-bin`). */
  tinyproxyPath?: string | undefined;
  /** The stunnel executable of the proxies' TLS listeners (default `/usr/bin/stunnel4`, Debian package `stunnel4`). */
  stunnelPath?: string | undefined;
  /** The IP reported to clients and the prober; defaults to the bind address. */
  advertiseHost?: string | undefined;
  /**
   * An IPv4 range (`127.1.0.0/16`) each proxy takes its own outgoing source address from, so each
   * has an egress IP of its own; absent: a routable bind address is the source, else the OS picks.
   * A loopback range gets a forwarder on its first address and the first port of `portRange`
   * (`forwarder.ts`), through which its proxies reach what is not on this host.
   */
  egressAddresses?: string | undefined;
  /** Where the proxies may connect: `ConnectPort` lines always, the kernel fence with `runAs`. */
  egress: EgressPolicy;
  /**
   * The user the proxies (and the forwarder) run as, whose sockets the kernel fence matches; the
   * backend loads the fence before its first proxy starts. Needs a relay running as root.
   */
  runAs?: RunAs | undefined;
  logger: Logger;
  /** How long a new process may take to listen (default 10 s). */
  startTimeoutMs?: number;
}

/**
 * The placement of a process instance: `bindAddress`, one of the relay's `bindAddresses` (default
 * the first).
 *
 * @throws ValidationError naming `spec.placement.<key>`
 */
export function resolveBindAddress(
  placement: Record<string, unknown>,
  bindAddresses: readonly string[],
): Record<string, unknown> {
  for (const key of Object.keys(placement)) {
    if (key !== 'bindAddress')
      throw new ValidationError(`spec.placement.${key}`, 'unknown key for a process provider (allowed: bindAddress)');
  }
  const value = placement['bindAddress'] ?? bindAddresses[0];
  if (typeof value !== 'string' || !bindAddresses.includes(value)) {
    throw new ValidationError(
      'spec.placement.bindAddress',
      `${JSON.stringify(value)} is not a bind address of this relay (allowed: ${bindAddresses.join(', ')})`,
    );
  }
  return { bindAddress: value };
}

/**
 * Healthy when the port range is valid, the state directory writable, tinyproxy and stunnel executable, the
 * kernel fence loaded (with `runAs`) and the forwarder (when the backend has one) running: a dead
 * one is started again here.
 */
export async function checkHealth(
  opts: ProcessBackendOptions,
  state: () => Promise<StateStore>,
  forwarder: Forwarder | undefined,
  fence: () => Promise<void>,
): Promise<ProviderHealth> {
  const started = performance.now();
  const health = (ok: boolean, message: string): ProviderHealth => ({
    ok,
    message,
    latencyMs: Math.round(performance.now() - started),
  });
  const [lo, hi] = opts.portRange;
  if (!(Number.isInteger(lo) && Number.isInteger(hi) && lo >= 1 && lo <= hi && hi <= 65535)) {
    return health(false, `port range ${lo}-${hi} is not a valid range`);
  }
  const tinyproxy = opts.tinyproxyPath ?? TINYPROXY_PATH;
  const stunnel = opts.stunnelPath ?? STUNNEL_PATH;
  try {
    const store = await state();
    const probe = path.join(store.root, `.check-${process.pid}`);
    await writeFile(probe, 'ok');
    await rm(probe, { force: true });
    await access(tinyproxy, constants.X_OK);
    await access(stunnel, constants.X_OK);
    // Before the forwarder: no process of this backend runs unfenced.
    await fence();
    const message = `state in ${store.root}, ports ${lo}-${hi}, ${tinyproxy}, ${stunnel}`;
    if (forwarder === undefined) return health(true, message);
    const pid = await forwarder.ensure(store);
    const { host, port } = forwarder.address;
    return health(true, `${message}, forwarder ${host}:${port} (pid ${pid})`);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    if (reason.includes(tinyproxy)) return health(false, `${reason} (Debian package tinyproxy-bin)`);
    return health(false, reason.includes(stunnel) ? `${reason} (Debian package stunnel4)` : reason);
  }
}
