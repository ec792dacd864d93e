/**
 * stunnel (Debian's `stunnel4`), the TLS listener in front of every backend's tinyproxy: its
 * configuration, the self-signed certificate each instance makes for itself (the key never leaves
 * the instance), and the cloud-init pieces that set it up on a guest (a gcp VM, a kvm domain).
 */
import { PermanentError } from '../errors.js';

/**
 * Where a guest keeps its listener: a unit of its own and a directory outside `/etc/stunnel/`,
 * whose every `*.conf` the package's SysV service (`stunnel4`) would start a second time at boot.
 */
export const GUEST_STUNNEL = {
  unit: 'egress-tls.service',
  conf: '/etc/egress-tls/stunnel.conf',
  cert: '/etc/egress-tls/cert.pem',
  key: '/etc/egress-tls/key.pem',
} as const;

const GUEST_UNIT_TEXT = [
  '[Unit]',
  'Description=TLS listener in front of the egress proxy (stunnel)',
  'Wants=network-online.target',
  'After=network-online.target tinyproxy.service',
  '',
  '[Service]',
  `ExecStart=/usr/bin/stunnel4 ${GUEST_STUNNEL.conf}`,
  'Restart=on-failure',
  '',
  '[Install]',
  'WantedBy=multi-user.target',
  '',
].join('\n');

/**
 * The TLS port of a guest whose proxy listens on `port`: the next one (one firewall range, one
 * rule to remember).
 *
 * @throws PermanentError naming `spec.port` when there is no next port
 */
export function guestTlsPort(port: number): number {
  if (port >= 65535)
    throw new PermanentError('the proxy port must be below 65535: its TLS listener takes the next one', 'spec.port');
  return port + 1;
}

/** One TLS listener: where it accepts, where it forwards in clear, and its certificate. */
export interface StunnelListener {
  /** `host:port` it accepts TLS on. */
  accept: string;
  /** `host:port` of the proxy, on the same machine. */
  connect: string;
  cert: string;
  key: string;
  /** The user and group it runs as after reading its key (a guest's `stunnel4`); absent: as started. */
  user?: { user: string; group: string } | undefined;
}

/**
 * The stunnel configuration: in the foreground (systemd, or the relay, supervises it), logging to
 * stderr, TLS 1.2 or later, the proxy's bytes forwarded as they come (tinyproxy sees the client's
 * CONNECT and `Proxy-Authorization` as if it had come in clear).
 */
export function stunnelConfig(listener: StunnelListener): string {
  return [
    '; The TLS listener in front of the egress proxy (written by egress-fleet).',
    'foreground = yes',
    'pid =',
    ...(listener.user ? [`setuid = ${listener.user.user}`, `setgid = ${listener.user.group}`] : []),
    '',
    '[proxy]',
    `accept = ${listener.accept}`,
    `connect = ${listener.connect}`,
    `cert = ${listener.cert}`,
    `key = ${listener.key}`,
    'sslVersionMin = TLSv1.2',
    '',
  ].join('\n');
}

/**
 * The subject name of every listener's certificate. Clients check the certificate by its
 * fingerprint, not by a name; a client that can only verify a chain and a name (curl before 8.10
 * ignores `--proxy-pinnedpubkey`) trusts the one certificate as its own CA and dials this name,
 * resolved to the proxy's address (docs/providers.md "TLS listeners").
 */
export const CERTIFICATE_NAME = 'egress-proxy';

/**
 * The `openssl` arguments that make a fresh self-signed certificate (P-256, ten years: its life is
 * the instance's; clients pin it, they never check dates) and its key, unencrypted (the listener
 * starts unattended) and readable by the owner only when run under `umask 077`.
 */
export function certificateArgs(cert: string, key: string): string[] {
  return [
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-days',
    '3650',
    '-subj',
    `/CN=${CERTIFICATE_NAME}`,
    '-keyout',
    key,
    '-out',
    cert,
  ];
}

/**
 * The guest's listener (its configuration and its unit) as cloud-init `write_files` entries, after
 * the packages (`defer`: the `stunnel4` user exists).
 *
 * @throws PermanentError naming `spec.port` when the TLS port would not exist
 */
export function guestStunnelFiles(port: number) {
  const unit = {
    path: `/etc/systemd/system/${GUEST_STUNNEL.unit}`,
    owner: 'root:root',
    permissions: '0644',
    content: GUEST_UNIT_TEXT,
  };
  const conf = {
    path: GUEST_STUNNEL.conf,
    owner: 'root:root',
    permissions: '0644',
    defer: true,
    content: stunnelConfig({
      accept: `0.0.0.0:${guestTlsPort(port)}`,
      connect: `127.0.0.1:${port}`,
      cert: GUEST_STUNNEL.cert,
      key: GUEST_STUNNEL.key,
      user: { user: 'stunnel4', group: 'stunnel4' },
    }),
  };
  return [conf, unit];
}

/**
 * The runcmd entries that make the guest's certificate once (on its first boot: a reboot keeps
 * the one clients pinned) and start the listener now and on every boot.
 */
export function guestStunnelCommands(): string[][] {
  const { cert, key, unit } = GUEST_STUNNEL;
  const make = ['openssl', ...certificateArgs(cert, key)].join(' ');
  return [
    ['sh', '-c', `test -s ${key} || (umask 077 && ${make} 2>/dev/null)`],
    ['systemctl', 'daemon-reload'],
    ['systemctl', 'enable', unit],
    ['systemctl', 'restart', unit],
  ];
}
