/** Parses libvirt connection URIs (`driver[+transport]://[user@][host][:port]/path[?query]`) into what a dial needs. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { LibvirtUriError } from './errors.js';

/** How the client reaches the daemon. */
export type Transport = 'unix' | 'tcp' | 'tls' | 'ssh';

/** A parsed libvirt URI. */
export interface LibvirtUri {
  /** The URI as given. */
  uri: string;
  /** The hypervisor driver, e.g. `qemu`, `test`, `storage`. */
  driver: string;
  transport: Transport;
  /** Empty for `unix`. */
  host: string;
  /** Defaults: tcp 16509, tls 16514; for ssh `undefined` lets ssh choose. */
  port: number | undefined;
  /** For ssh: the remote login; `undefined` lets ssh choose. */
  user: string | undefined;
  /** The daemon's unix socket path (`unix` only). */
  socketPath: string | undefined;
  /**
   * The name sent in CONNECT_OPEN: like libvirt's remote driver, the URI with the transport, user,
   * host and port dropped and the client-side query parameters removed (`qemu+ssh://u@h/system` →
   * `qemu:///system`), unless the `name` parameter overrides it.
   */
  remoteName: string;
  /** Query parameters the client itself consumes (e.g. `socket`, `keyfile`, `no_verify`, `pkipath`, `command`). */
  params: Readonly<Record<string, string>>;
}

const TRANSPORTS: readonly string[] = ['unix', 'tcp', 'tls', 'ssh'];
const UNSUPPORTED_TRANSPORTS: readonly string[] = ['libssh', 'libssh2', 'ext'];
const DEFAULT_PORTS: Partial<Record<Transport, number>> = { tcp: 16509, tls: 16514 };

/** Parameters libvirt's remote driver consumes on the client side; never forwarded in the remote name. */
const CLIENT_PARAMS: ReadonlySet<string> = new Set([
  'name',
  'command',
  'socket',
  'netcat',
  'keyfile',
  'sshauth',
  'no_verify',
  'no_tty',
  'pkipath',
  'known_hosts',
  'known_hosts_verify',
  'tls_priority',
  'mode',
  'proxy',
]);

/** Where the daemon's socket is when the URI does not say (`/system` or `/session` of a local daemon). */
function defaultSocketPath(uri: string, driver: string, path: string, env: NodeJS.ProcessEnv): string {
  if (path === '/system') {
    // A host running the modular daemons has one socket per driver (virtqemud-sock); otherwise libvirtd's.
    const modular = `/var/run/libvirt/virt${driver}d-sock`;
    return existsSync(modular) ? modular : '/var/run/libvirt/libvirt-sock';
  }
  if (path === '/session') {
    const runtimeDir = env['XDG_RUNTIME_DIR'];
    if (!runtimeDir) throw new LibvirtUriError(uri, 'socket', 'a /session URI needs XDG_RUNTIME_DIR or ?socket=');
    return join(runtimeDir, 'libvirt', 'libvirt-sock');
  }
  throw new LibvirtUriError(uri, 'socket', `no default socket for path ${JSON.stringify(path)}: add ?socket=`);
}

/**
 * Parses a libvirt URI as `virsh -c` accepts it, for the transports this client speaks.
 *
 * @param uri - e.g. `qemu:///system`, `qemu+unix:///system?socket=/path`, `qemu+tcp://host:16509/system`,
 *   `qemu+tls://host/system`, `qemu+ssh://user@host/system`, `test+tcp://127.0.0.1:16511/default`
 * @param env - where `XDG_RUNTIME_DIR` is read for `/session` sockets
 * @returns the parsed URI
 * @throws LibvirtUriError naming the bad part
 */
export function parseLibvirtUri(uri: string, env: NodeJS.ProcessEnv = process.env): LibvirtUri {
  const schemeMatch = /^([^:/?#]*):\/\//.exec(uri);
  if (!schemeMatch) throw new LibvirtUriError(uri, 'scheme', 'expected driver[+transport]://…');
  const scheme = schemeMatch[1] ?? '';
  const [driver = '', transportText, ...extra] = scheme.split('+');
  if (!/^[a-z][a-z0-9]*$/.test(driver)) {
    throw new LibvirtUriError(uri, 'scheme', `driver ${JSON.stringify(driver)} must be lower-case letters and digits`);
  }
  if (extra.length > 0) throw new LibvirtUriError(uri, 'scheme', 'more than one "+transport"');
  if (transportText !== undefined && UNSUPPORTED_TRANSPORTS.includes(transportText)) {
    throw new LibvirtUriError(uri, 'transport', `"${transportText}" is not supported; use ssh`);
  }
  if (transportText !== undefined && !TRANSPORTS.includes(transportText)) {
    throw new LibvirtUriError(uri, 'transport', `"${transportText}" is not one of ${TRANSPORTS.join(', ')}`);
  }

  let url: URL;
  try {
    url = new URL(uri);
  } catch (error) {
    throw new LibvirtUriError(uri, 'authority', `not a valid URI (${(error as Error).message})`);
  }
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  // libvirt's rule: no transport means unix without a host, tls with one.
  const transport = (transportText ?? (host ? 'tls' : 'unix')) as Transport;
  if (transport === 'unix' && host) throw new LibvirtUriError(uri, 'host', 'the unix transport takes no host');
  if (transport !== 'unix' && !host) throw new LibvirtUriError(uri, 'host', `the ${transport} transport needs a host`);
  if (transport === 'unix' && url.port) throw new LibvirtUriError(uri, 'port', 'the unix transport takes no port');
  const user = url.username ? decodeURIComponent(url.username) : undefined;
  if (url.password) throw new LibvirtUriError(uri, 'user', 'passwords in the URI are not supported');
  if (user && transport !== 'ssh')
    throw new LibvirtUriError(uri, 'user', `a user is only used by ssh, not ${transport}`);
  const path = decodeURIComponent(url.pathname);
  if (!path.startsWith('/') || path.length < 2) {
    throw new LibvirtUriError(uri, 'path', 'missing: expected e.g. /system, /session or /default');
  }

  const params: Record<string, string> = {};
  const forwarded = new URLSearchParams();
  for (const [key, value] of url.searchParams) {
    if (CLIENT_PARAMS.has(key)) params[key] = value;
    else forwarded.append(key, value);
  }
  if (params['socket'] !== undefined && !params['socket'].startsWith('/')) {
    throw new LibvirtUriError(uri, 'socket', 'must be an absolute path');
  }
  const query = forwarded.toString();
  const remoteName = params['name'] ?? `${driver}://${path}${query ? `?${query}` : ''}${url.hash}`;

  return {
    uri,
    driver,
    transport,
    host,
    port: url.port ? Number(url.port) : DEFAULT_PORTS[transport],
    user,
    socketPath: transport === 'unix' ? (params['socket'] ?? defaultSocketPath(uri, driver, path, env)) : undefined,
    remoteName,
    params,
  };
}
