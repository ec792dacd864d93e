/**
 * The proxy of a fake machine (a gce VM, a kube Pod): the tinyproxy configuration the product
 * generated for it, run by Debian's tinyproxy through the process backend's launcher, on the
 * machine's own loopback address.
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { startTinyproxy, TINYPROXY_PATH, type TinyproxyProcess } from '../../relay/backends/process/tinyproxy.js';
import { STUNNEL_PATH } from '../../relay/backends/process/tls-listener.js';
import { stunnelConfig } from '../../shared/providers/stunnel.js';

/** Where a fake's guests keep their config and log files. */
export interface GuestProxyStart {
  /** The instance (VM or Pod) name: its files and its `--egress-proxy=` marker. */
  name: string;
  /** The configuration as the product wrote it (user-data's tinyproxy.conf, the Pod's Secret). */
  config: string;
  /** The machine's address: one loopback address per machine stands in for its interface. */
  listen: string;
  /** Source address of its outgoing connections (a VM's external IP); absent: the OS picks. */
  bind?: string | undefined;
  /** Extra argv markers that name the fake it belongs to. */
  markers: readonly string[];
  /** Directory for the config and log files. */
  dir: string;
}

/** A guest proxy that listens. */
export interface ListeningGuest {
  pid: number;
  /** Resolves when the process exits, for whatever reason. */
  exited: Promise<void>;
  /** Signals the process, once it has not exited (a pid is never signalled after its exit). */
  kill(signal: NodeJS.Signals): void;
}

/**
 * The `Port` of a tinyproxy configuration: the one fact about it a fake needs before the proxy
 * runs (its NAT and its Pod's readiness probe forward to it).
 *
 * @throws Error when the configuration sets no port, as tinyproxy would refuse to start
 */
export function configuredPort(config: string): number {
  const port = Number(/^Port\s+(\d+)\s*$/m.exec(config)?.[1]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error('tinyproxy.conf sets no valid Port');
  return port;
}

/**
 * The product's configuration as the fake machine runs it. A fake machine is a loopback address
 * on the test host, not a machine of its own: tinyproxy listens on that address only (`Listen`;
 * on a VM or in a Pod it binds every address of its own interface), leaves from the VM's external
 * address (`Bind`; the VPC's NAT does that for a real VM), runs as the test's user (there is no
 * `tinyproxy` user to switch to: `User`/`Group` go) and logs to its file rather than the guest's
 * syslog. Every other line (BasicAuth, ConnectPort, Timeout, DisableViaHeader) is the product's.
 */
export function fakeMachineConfig(start: Pick<GuestProxyStart, 'config' | 'listen' | 'bind'>): string {
  const kept = start.config.split('\n').filter((line) => !/^\s*(User|Group|Syslog|Listen|Bind)\s/i.test(line));
  return [
    ...kept.filter((line) => line.trim() !== ''),
    `Listen ${start.listen}`,
    ...(start.bind ? [`Bind ${start.bind}`] : []),
    '',
  ].join('\n');
}

/**
 * Starts the guest's tinyproxy (`relay/backends/process/tinyproxy.ts#startTinyproxy`) and waits
 * until it listens.
 *
 * @throws Error (PortInUseError, RetryableError) when it exits or does not listen within 10 s
 */
export async function startGuestProxy(start: GuestProxyStart): Promise<ListeningGuest> {
  mkdirSync(start.dir, { recursive: true });
  const port = configuredPort(start.config);
  const running = await startTinyproxy(
    {
      program: TINYPROXY_PATH,
      markers: [`--egress-proxy=${start.name}`, ...start.markers],
      config: fakeMachineConfig(start),
      listen: { host: start.listen, port },
      configPath: join(start.dir, `${start.name}.conf`),
      logPath: join(start.dir, `${start.name}.log`),
      timeoutMs: 10_000,
    },
    () => Promise.resolve(),
  );
  return guestProcess(running);
}

/** A fake machine's TLS listener: where the product's stunnel.conf said, on the machine's address. */
export interface GuestTlsStart {
  /** The instance (VM or Pod) name: its files and its `--egress-tls=` marker. */
  name: string;
  /** The machine's address: stunnel accepts there and forwards to the proxy there. */
  listen: string;
  /** stunnel's `accept` port and the proxy port its `connect` names. */
  tlsPort: number;
  proxyPort: number;
  /** The certificate and key the machine made, as files on this host. */
  cert: string;
  key: string;
  markers: readonly string[];
  dir: string;
}

/**
 * Starts Debian's stunnel (`relay/backends/process/tls-listener.ts#STUNNEL_PATH`) as the machine's
 * TLS listener and waits until it listens. The configuration is the product's
 * (`shared/providers/stunnel.ts#stunnelConfig`) with the machine's address for its loopback and
 * wildcard: a fake machine is one loopback address of the test host.
 *
 * @throws Error (PortInUseError, RetryableError) when it exits or does not listen within 10 s
 */
export async function startGuestTls(start: GuestTlsStart): Promise<ListeningGuest> {
  mkdirSync(start.dir, { recursive: true });
  const running = await startTinyproxy(
    {
      program: STUNNEL_PATH,
      // stunnel reads its config file and ignores what follows: the markers.
      argv: (path, markers) => [path, ...markers],
      markers: [`--egress-tls=${start.name}`, ...start.markers],
      config: stunnelConfig({
        accept: `${start.listen}:${start.tlsPort}`,
        connect: `${start.listen}:${start.proxyPort}`,
        cert: start.cert,
        key: start.key,
      }),
      listen: { host: start.listen, port: start.tlsPort },
      configPath: join(start.dir, `${start.name}-stunnel.conf`),
      logPath: join(start.dir, `${start.name}-stunnel.log`),
      timeoutMs: 10_000,
    },
    () => Promise.resolve(),
  );
  return guestProcess(running);
}

/** One `key = value` setting of a stunnel configuration; undefined when it is not set. */
export function stunnelSetting(config: string, key: string): string | undefined {
  return new RegExp(`^${key}\\s*=\\s*(\\S+)\\s*$`, 'm').exec(config)?.[1];
}

function guestProcess(running: TinyproxyProcess): ListeningGuest {
  let alive = true;
  const exited = running.exited.then(() => void (alive = false));
  return {
    pid: running.pid,
    exited,
    kill(signal) {
      if (!alive) return;
      try {
        process.kill(running.pid, signal);
      } catch {
        // It exited between the check and the signal.
      }
    },
  };
}
