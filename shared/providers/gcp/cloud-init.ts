/** The cloud-init user-data that turns a fresh VM into an authenticating tinyproxy on the proxy port. */
import { stringify } from 'yaml';
import { PermanentError } from '../../errors.js';

/** Where cloud-init writes the proxy configuration. */
export const TINYPROXY_CONF = '/etc/tinyproxy/tinyproxy.conf';

/**
 * The guest attribute the VM sets once tinyproxy serves with its configuration (value: the port).
 * RUNNING only means the kernel booted; until this is set the provider reports the VM Pending, so
 * probes never count the minute cloud-init needs as failures.
 */
export const READY_ATTRIBUTE = 'egress/ready';
const METADATA_URL = 'http://metadata.google.internal/computeMetadata/v1/instance/guest-attributes';

/**
 * tinyproxy's config grammar accepts `BasicAuth` user and password made of `[-A-Za-z0-9._]` only
 * (its `ALNUM` token); anything else would leave the proxy without authentication.
 */
const TINYPROXY_TOKEN = /^[-A-Za-z0-9._]{1,128}$/;

export interface UserDataInput {
  instance: string;
  proxy: string;
  port: number;
  credentials: { username: string; password: string };
}

/** The tinyproxy configuration: every interface, Basic auth required, no Via header. */
export function tinyproxyConfig(port: number, credentials: { username: string; password: string }): string {
  for (const [what, value] of [
    ['username', credentials.username],
    ['password', credentials.password],
  ] as const) {
    // The value itself never goes into the message: it is a secret.
    if (!TINYPROXY_TOKEN.test(value))
      throw new PermanentError(`the proxy ${what} must be 1-128 characters of [-A-Za-z0-9._]`, 'credentials');
  }
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
    `BasicAuth ${credentials.username} ${credentials.password}`,
    '',
  ].join('\n');
}

/**
 * The cloud-init `write_files` entry of the tinyproxy configuration, written after the packages
 * (`defer`), when the `tinyproxy` group exists. Shared with the kvm relay backend's seed.
 */
export function tinyproxyConfigFile(port: number, credentials: { username: string; password: string }) {
  return {
    path: TINYPROXY_CONF,
    owner: 'root:tinyproxy',
    permissions: '0640',
    defer: true,
    content: tinyproxyConfig(port, credentials),
  };
}

/**
 * The `user-data` metadata value (cloud-init reads it on GCE). The package is installed first; the
 * configuration is written after it (`defer`), when the `tinyproxy` group exists; then the service
 * is restarted with it and the VM reports itself ready through a guest attribute.
 *
 * @throws PermanentError on `credentials` the proxy's config grammar cannot carry
 */
export function buildUserData(input: UserDataInput): string {
  const doc = {
    package_update: true,
    packages: ['tinyproxy'],
    write_files: [tinyproxyConfigFile(input.port, input.credentials)],
    runcmd: [
      ['systemctl', 'enable', 'tinyproxy'],
      [
        'sh',
        '-c',
        `systemctl restart tinyproxy && curl -sf -X PUT --data ${input.port} -H 'Metadata-Flavor: Google' ${METADATA_URL}/${READY_ATTRIBUTE}`,
      ],
    ],
  };
  return `#cloud-config\n# egress proxy ${input.proxy} (instance ${input.instance}), written by the gcp provider\n${stringify(doc)}`;
}
