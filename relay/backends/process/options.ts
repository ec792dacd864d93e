/** The process backend's options (its entry in the relay configuration), its placement rule and its health check. */
import { access, constants, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { z } from 'zod';
import { egressPolicySchema } from '../../../shared/config/egress-policy.js';
import { dnsLabel } from '../../../shared/domain/names.js';
import { ValidationError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { ProviderHealth } from '../../../shared/providers/contract.js';
import { absolutePath, ipAddress, port, seconds } from '../option-fields.js';
import { parseIpv4Range } from './egress.js';
import { runAsSchema } from './fence.js';
import type { Forwarder } from './forwarder.js';
import type { StateStore } from './state.js';
import { TINYPROXY_PATH } from './tinyproxy.js';
import { STUNNEL_PATH } from './tls-listener.js';

const UNSPECIFIED = new Set(['0.0.0.0', '::']);

/** An IPv4 range in CIDR notation (`127.1.0.0/16`). */
const ipv4Range = z.string().superRefine((cidr, ctx) => {
  const range = parseIpv4Range(cidr);
  if (typeof range === 'string') ctx.addIssue({ code: 'custom', message: range });
});

/** A `process` backend in the relay configuration: proxies are processes on the relay's own host. */
export const processBackendSchema = z
  .strictObject({
    /** The provider name this backend serves. */
    provider: dnsLabel,
    type: z.literal('process'),
    /**
     * Where instance state (`instances/<name>.json`, mode 0600) and logs (`logs/<name>.log`) live;
     * relative paths are resolved against the working directory. Several process backends may share
     * one directory: records carry their provider, and ports are allocated across all of them.
     */
    stateDir: z.string().min(1),
    /** Addresses proxies may listen on; the first is the default placement. */
    bindAddresses: z.array(ipAddress).min(1),
    /** Inclusive port range for proxies. */
    portRange: z.tuple([port, port]).refine(([lo, hi]) => lo <= hi, 'must be [low, high] with low <= high'),
    /** The IP clients and the prober use; defaults to the bind address; required when that is a wildcard. */
    advertiseHost: z.string().min(1).optional(),
    /**
     * Each proxy's own outgoing source address (its egress IP) comes from this IPv4 range; every
     * address must be local to the host (all of 127.0.0.0/8 is, on Linux). Absent: a routable bind
     * address is the source, else the OS picks. A loopback range gets a forwarder on its first
     * address and the first port of `portRange` (`forwarder.ts`), through which its proxies reach
     * what is not on this host.
     */
    egressAddresses: ipv4Range.optional(),
    /**
     * Where the proxies may connect (shared/config/egress-policy.ts; absent: the safe default):
     * tinyproxy's `ConnectPort` lines always, the kernel fence with `runAs`.
     */
    egress: egressPolicySchema.prefault({}),
    /**
     * The user (and group) the proxy processes (and the forwarder) run as, and whose sockets the
     * backend's kernel fence matches: the backend loads the fence before its first proxy starts.
     * Needs a relay that runs as root. Absent: proxies run as the relay's user with no kernel
     * fence, only tinyproxy's ConnectPort lines (docs/operations.md, "Egress fence").
     */
    runAs: runAsSchema.optional(),
    /** The tinyproxy executable (default `/usr/bin/tinyproxy`, Debian package `tinyproxy-bin`). */
    tinyproxyPath: absolutePath.optional(),
    /** The stunnel executable of the proxies' TLS listeners (default `/usr/bin/stunnel4`, Debian package `stunnel4`). */
    stunnelPath: absolutePath.optional(),
    /** How long a new process (a proxy, its TLS listener, the forwarder) may take to listen (default 10). */
    startTimeoutSeconds: seconds.optional(),
  })
  .refine((b) => b.advertiseHost !== undefined || !b.bindAddresses.some((a) => UNSPECIFIED.has(a)), {
    message: 'a wildcard bind address (0.0.0.0 or ::) is not reachable: set advertiseHost',
    path: ['advertiseHost'],
  });
export type ProcessBackendConfig = z.infer<typeof processBackendSchema>;

/** How a process backend is set up (one per configured `process` provider on a relay): its configuration, and what the relay adds. */
export type ProcessBackendOptions = Omit<ProcessBackendConfig, 'type'> & {
  /** This installation's id: `list` returns only instances carrying it. */
  installationId: string;
  logger: Logger;
};

/** The executables the backend runs: the configured ones, else Debian's. */
export function executables(opts: Pick<ProcessBackendOptions, 'tinyproxyPath' | 'stunnelPath'>): {
  tinyproxy: string;
  stunnel: string;
} {
  return { tinyproxy: opts.tinyproxyPath ?? TINYPROXY_PATH, stunnel: opts.stunnelPath ?? STUNNEL_PATH };
}

/** How long a new process may take to listen, in milliseconds. */
export function startTimeoutMs(opts: Pick<ProcessBackendOptions, 'startTimeoutSeconds'>): number {
  return (opts.startTimeoutSeconds ?? 10) * 1000;
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
  const { tinyproxy, stunnel } = executables(opts);
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
