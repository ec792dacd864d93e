/**
 * The cloud-init user-data of the echo VM: Ubuntu's `nodejs` package runs the bundled echo server
 * (`dist/echo/echo.mjs`) as a systemd service with a dynamic user. `npm run build` writes it to
 * `dist/echo/user-data.yaml`; infra/terraform/echo.tf passes that file as the VM's `user-data`.
 */
import { stringify } from 'yaml';
import { enableUnitCommand } from '../../shared/providers/tinyproxy.js';

/**
 * The echo's port on its VM: HTTP's own, which every proxy's egress fence admits by default
 * (probes must not need an exception to reach it).
 */
export const ECHO_PORT = 80;
const SCRIPT = '/opt/egress-echo/echo.mjs';
const UNIT = 'egress-echo.service';

/** The unit: no privilege but binding a port below 1024, no writable file system, restarted if it stops. */
function unitText(port: number): string {
  return [
    '[Unit]',
    'Description=egress-fleet echo endpoint (answers {"ip": "<caller>"})',
    'After=network-online.target',
    'Wants=network-online.target',
    '',
    '[Service]',
    `ExecStart=/usr/bin/node ${SCRIPT}`,
    `Environment=ECHO_PORT=${port}`,
    'DynamicUser=yes',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'PrivateTmp=yes',
    'NoNewPrivileges=yes',
    'CapabilityBoundingSet=CAP_NET_BIND_SERVICE',
    'AmbientCapabilities=CAP_NET_BIND_SERVICE',
    'RestrictAddressFamilies=AF_INET AF_INET6',
    'Restart=always',
    'RestartSec=2',
    '',
    '[Install]',
    'WantedBy=multi-user.target',
    '',
  ].join('\n');
}

/**
 * @param script - the bundled echo server (`dist/echo/echo.mjs`)
 * @param port - the port it listens on
 */
export function buildEchoUserData(script: string, port = ECHO_PORT): string {
  const doc = {
    package_update: true,
    packages: ['nodejs'],
    write_files: [
      { path: SCRIPT, content: script, owner: 'root:root', permissions: '0644' },
      { path: `/etc/systemd/system/${UNIT}`, content: unitText(port), owner: 'root:root', permissions: '0644' },
    ],
    runcmd: [['systemctl', 'daemon-reload'], enableUnitCommand(UNIT, { now: true })],
  };
  return `#cloud-config\n# egress-fleet echo endpoint, written by npm run build (infra/echo/user-data.ts)\n${stringify(doc, { blockQuote: 'literal' })}`;
}
