/** The cloud-init user-data that turns a fresh VM into an authenticating tinyproxy on the proxy port, behind a TLS listener on the next. */
import { stringify } from 'yaml';
import type { EgressPolicy } from '../../config/egress-policy.js';
import { GUEST_STUNNEL, guestStunnelCommands, guestStunnelFiles } from '../stunnel.js';
import { enableUnitCommand, fenceCommands, fenceFile, tinyproxyConfigFile } from '../tinyproxy.js';

/**
 * The guest attribute the VM sets once tinyproxy serves with its configuration (value: the port).
 * RUNNING only means the kernel booted; until this is set the provider reports the VM Pending, so
 * probes never count the minute cloud-init needs as failures.
 */
export const READY_ATTRIBUTE = 'egress/ready';
const METADATA_URL = 'http://metadata.google.internal/computeMetadata/v1/instance/guest-attributes';
/** The script that sets READY_ATTRIBUTE, and the systemd unit that runs it on every boot. */
export const READY_SCRIPT = '/usr/local/sbin/egress-ready';
export const READY_UNIT = 'egress-ready.service';
/** PUT attempts per boot, `READY_RETRY_SECONDS` apart: one lost request does not strand the VM. */
export const READY_ATTEMPTS = 60;
const READY_RETRY_SECONDS = 5;

export interface UserDataInput {
  instance: string;
  proxy: string;
  port: number;
  credentials: { username: string; password: string };
  /** The provider's egress policy, enforced in the guest (`fenceFile`). */
  egress: EgressPolicy;
}

/**
 * The readiness script: once tinyproxy is active, PUT the guest attribute, retried. runcmd runs
 * once per instance; the unit that runs this script is enabled, so a reboot sets it again.
 */
function readyScript(port: number): string {
  const put = `curl -sf -m 5 -X PUT --data ${port} -H 'Metadata-Flavor: Google' ${METADATA_URL}/${READY_ATTRIBUTE}`;
  return [
    '#!/bin/sh',
    `# Sets the guest attribute ${READY_ATTRIBUTE} once tinyproxy and its TLS listener serve; run on every boot by ${READY_UNIT}.`,
    `for attempt in $(seq 1 ${READY_ATTEMPTS}); do`,
    `  if systemctl is-active --quiet tinyproxy ${GUEST_STUNNEL.unit} && ${put}; then exit 0; fi`,
    `  sleep ${READY_RETRY_SECONDS}`,
    'done',
    `echo "egress-ready: could not set ${READY_ATTRIBUTE}" >&2`,
    'exit 1',
    '',
  ].join('\n');
}

const READY_UNIT_TEXT = [
  '[Unit]',
  `Description=Report the egress proxy ready (guest attribute ${READY_ATTRIBUTE})`,
  'Wants=network-online.target',
  `After=network-online.target tinyproxy.service ${GUEST_STUNNEL.unit}`,
  '',
  '[Service]',
  'Type=oneshot',
  `ExecStart=${READY_SCRIPT}`,
  '',
  '[Install]',
  'WantedBy=multi-user.target',
  '',
].join('\n');

/**
 * The `user-data` metadata value (cloud-init reads it on GCE). The packages are installed first; the
 * configuration and the egress fence are written after them (`defer`), when the `tinyproxy` user
 * exists; the fence is loaded, then the proxy is restarted with its configuration, the TLS listener
 * gets its certificate (made on the VM) and starts, and the readiness unit is enabled and started
 * without waiting for it (it reports the VM ready through a guest attribute, retried, on this and
 * every later boot).
 *
 * @throws PermanentError on `credentials` the proxy's config grammar cannot carry, or a `port` that
 *   leaves no TLS port
 */
export function buildUserData(input: UserDataInput): string {
  const doc = {
    package_update: true,
    packages: ['tinyproxy', 'nftables', 'stunnel4', 'openssl'],
    write_files: [
      tinyproxyConfigFile(input),
      fenceFile(input.egress),
      ...guestStunnelFiles(input.port),
      { path: READY_SCRIPT, content: readyScript(input.port), owner: 'root:root', permissions: '0755' },
      { path: `/etc/systemd/system/${READY_UNIT}`, content: READY_UNIT_TEXT, owner: 'root:root', permissions: '0644' },
    ],
    runcmd: [
      ...fenceCommands(),
      enableUnitCommand('tinyproxy'),
      ['systemctl', 'restart', 'tinyproxy'],
      ...guestStunnelCommands(),
      ['systemctl', 'enable', READY_UNIT],
      ['systemctl', 'start', '--no-block', READY_UNIT],
    ],
  };
  return `#cloud-config\n# egress proxy ${input.proxy} (instance ${input.instance}), written by the gcp provider\n${stringify(doc)}`;
}
