/**
 * tinyproxy, the proxy software of the `gcp`, `kubernetes` and `kvm` instances: its Basic auth
 * directive and the configuration a cloud-init guest (a VM, a kvm domain) writes.
 */
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

/** The configuration of a cloud-init guest: every interface, Basic auth required, no Via header. */
export function guestTinyproxyConfig(port: number, credentials: { username: string; password: string }): string {
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
    '',
  ].join('\n');
}

/**
 * The cloud-init `write_files` entry of the guest configuration, written after the packages
 * (`defer`), when the `tinyproxy` group exists (the gcp user-data and the kvm seed).
 */
export function tinyproxyConfigFile(port: number, credentials: { username: string; password: string }) {
  return {
    path: TINYPROXY_CONF,
    owner: 'root:tinyproxy',
    permissions: '0640',
    defer: true,
    content: guestTinyproxyConfig(port, credentials),
  };
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
