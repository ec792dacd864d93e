/**
 * tinyproxy, the proxy software of the `gcp`, `kubernetes` and `kvm` instances: its Basic auth
 * directive, the configuration a cloud-init guest (a VM, a kvm domain) writes, and the guest's
 * egress fence (an nftables table on tinyproxy's user).
 */
import { connectPortLines, nftFence, type EgressPolicy } from '../config/egress-policy.js';
import { PermanentError } from '../errors.js';

/** Where cloud-init writes the proxy configuration. */
export const TINYPROXY_CONF = '/etc/tinyproxy/tinyproxy.conf';

/**
 * tinyproxy's config grammar accepts `BasicAuth` user and password made of `[-A-Za-z0-9._]` only
 * (its `ALNUM` token); anything else would leave the proxy without authentication.
 */
const TINYPROXY_TOKEN = /^[-A-Za-z0-9._]{1,128}$/;

/**
 * The `BasicAuth` line for `credentials`: every request must authenticate (407 without).
 *
 * @throws PermanentError naming `credentials.username` or `credentials.password` when tinyproxy
 *   could not parse the value (the value itself never goes into the message: it is a secret)
 */
export function basicAuthDirective(credentials: { username: string; password: string }): string {
  for (const [key, value] of Object.entries(credentials)) {
    if (!TINYPROXY_TOKEN.test(value))
      throw new PermanentError(`the proxy ${key} must be 1-128 characters of [-A-Za-z0-9._]`, `credentials.${key}`);
  }
  return `BasicAuth ${credentials.username} ${credentials.password}`;
}

/** What a guest's proxy is configured with. */
export interface GuestProxy {
  port: number;
  credentials: { username: string; password: string };
  egress: EgressPolicy;
}

/**
 * The configuration of a cloud-init guest: every interface, Basic auth required, no Via header,
 * CONNECT only to the policy's ports (the kernel fence, {@link fenceFile}, covers plain requests).
 */
export function guestTinyproxyConfig({ port, credentials, egress }: GuestProxy): string {
  return [
    'User tinyproxy',
    'Group tinyproxy',
    `Port ${port}`,
    'Timeout 600',
    'MaxClients 200',
    'Syslog On',
    'LogLevel Warning',
    'DisableViaHeader Yes',
    // No Allow/Deny lines: any client may connect, and every request must authenticate.
    basicAuthDirective(credentials),
    ...connectPortLines(egress),
    '',
  ].join('\n');
}

/**
 * The cloud-init `write_files` entry of the guest configuration, written after the packages
 * (`defer`), when the `tinyproxy` group exists (the gcp user-data and the kvm seed).
 */
export function tinyproxyConfigFile(proxy: GuestProxy) {
  return {
    path: TINYPROXY_CONF,
    owner: 'root:tinyproxy',
    permissions: '0640',
    defer: true,
    content: guestTinyproxyConfig(proxy),
  };
}

/** Where the guest's fence lives: Debian's nftables.service loads this file on every boot. */
export const NFTABLES_CONF = '/etc/nftables.conf';

/**
 * The guest's egress fence as a cloud-init `write_files` entry: an nftables table on the sockets
 * of tinyproxy's user (the package creates it), so the proxy reaches only what the policy allows,
 * judged on the addresses names resolve to, while the guest agent and cloud-init (root) still
 * reach the metadata server. Written after the packages (`defer`): it replaces the nftables
 * package's own file.
 */
export function fenceFile(egress: EgressPolicy) {
  return {
    path: NFTABLES_CONF,
    owner: 'root:root',
    permissions: '0644',
    defer: true,
    content: nftFence(egress, { table: 'egress_fence', owner: 'tinyproxy' }),
  };
}

/**
 * The runcmd entries that load the fence now and on every boot; they run before tinyproxy is
 * restarted with its configuration, so the configured proxy never serves unfenced.
 */
export function fenceCommands(): string[][] {
  return [enableUnitCommand('nftables'), ['systemctl', 'restart', 'nftables']];
}

/**
 * The runcmd entry that makes `unit` start on every boot (and now, with `now`), enabling it only
 * when it is not: Debian's packages enable their services as they install, and `systemctl enable`
 * of a unit with a SysV script beside it (tinyproxy, qemu-guest-agent) runs `update-rc.d` through
 * `systemd-sysv-install` every time — 5–6 s each on an emulated CPU (the kvm test guest's serial
 * console: 11 of its 49 s to a serving proxy). A `static` unit (Debian's guest agent, started by
 * udev) counts as enabled.
 */
export function enableUnitCommand(unit: string, options: { now?: boolean } = {}): string[] {
  const start = options.now ? `; systemctl start ${unit}` : '';
  return ['sh', '-c', `(systemctl is-enabled --quiet ${unit} || systemctl enable ${unit})${start}`];
}
