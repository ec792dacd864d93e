/** The cloud-init user-data: valid YAML for cloud-init, a tinyproxy config with auth and the right port, nothing open. */
import { DEFAULT_EGRESS_POLICY } from '../../config/egress-policy.js';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { z } from 'zod';
import { PermanentError } from '../../errors.js';
import { buildUserData, READY_ATTEMPTS, READY_ATTRIBUTE, READY_SCRIPT, READY_UNIT } from './cloud-init.js';
import { GUEST_STUNNEL } from '../stunnel.js';
import { NFTABLES_CONF, TINYPROXY_CONF } from '../tinyproxy.js';
import { instanceResource } from './resources.js';
import { parseGcpOptions, resolveGcpPlacement } from './options.js';

const credentials = { username: 'u-eu-1', password: 'Zm9v-YmFy_YmF6.cXV4' };
const cloudConfig = z.object({
  packages: z.array(z.string()),
  write_files: z.array(
    z.object({
      path: z.string(),
      content: z.string(),
      owner: z.string(),
      permissions: z.string(),
      defer: z.boolean().optional(),
    }),
  ),
  runcmd: z.array(z.array(z.string())),
});

describe('buildUserData', () => {
  const text = buildUserData({
    instance: 'ep-eu-1-3f2a9c1b',
    proxy: 'eu-1',
    port: 8443,
    credentials,
    egress: DEFAULT_EGRESS_POLICY,
  });
  const doc = cloudConfig.parse(parse(text));
  const conf = doc.write_files.find((f) => f.path === TINYPROXY_CONF);
  const directives = (conf?.content ?? '')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(/\s+/));

  it('is a #cloud-config YAML document that installs tinyproxy and nftables and writes its config after them', () => {
    expect(text.startsWith('#cloud-config\n')).toBe(true);
    expect(doc.packages).toEqual(['tinyproxy', 'nftables', 'stunnel4', 'openssl']);
    expect(conf).toMatchObject({ owner: 'root:tinyproxy', permissions: '0640', defer: true });
  });

  it('configures the right port and Basic auth with the credentials, and no Allow or Listen that would change exposure', () => {
    expect(directives).toContainEqual(['Port', '8443']);
    expect(directives).toContainEqual(['BasicAuth', credentials.username, credentials.password]);
    expect(directives.filter(([k]) => k === 'BasicAuth')).toHaveLength(1);
    expect(directives.map(([k]) => k)).not.toContain('Allow');
    expect(directives.map(([k]) => k)).not.toContain('Listen');
    expect(directives).toContainEqual(['DisableViaHeader', 'Yes']);
  });

  it('restarts tinyproxy with the config, then starts (without waiting) a unit enabled for every boot that reports ready', () => {
    const commands = doc.runcmd.map((c) => c.join(' '));
    expect(commands.slice(3)).toEqual([
      'systemctl restart tinyproxy',
      // The TLS listener: its certificate made on the VM once, its unit enabled and started.
      expect.stringMatching(/^sh -c test -s \/etc\/egress-tls\/key\.pem \|\| \(umask 077 && openssl req -x509 /),
      'systemctl daemon-reload',
      `systemctl enable ${GUEST_STUNNEL.unit}`,
      `systemctl restart ${GUEST_STUNNEL.unit}`,
      `systemctl enable ${READY_UNIT}`,
      `systemctl start --no-block ${READY_UNIT}`,
    ]);
    const unit = doc.write_files.find((f) => f.path === `/etc/systemd/system/${READY_UNIT}`)?.content ?? '';
    expect(unit).toMatch(/^After=network-online\.target tinyproxy\.service egress-tls\.service$/m);
    const tls = doc.write_files.find((f) => f.path === GUEST_STUNNEL.conf)?.content ?? '';
    expect(tls).toContain('accept = 0.0.0.0:8444');
    expect(tls).toContain('connect = 127.0.0.1:8443');
    expect(unit).toMatch(new RegExp(`^ExecStart=${READY_SCRIPT}$`, 'm'));
    expect(unit).toMatch(/^WantedBy=multi-user\.target$/m);
  });

  it('loads the egress fence on the proxy user before tinyproxy restarts with its config; CONNECT only to the allowed ports', () => {
    const fence = doc.write_files.find((f) => f.path === NFTABLES_CONF);
    expect(fence).toMatchObject({ owner: 'root:root', defer: true });
    expect(fence?.content).toContain('meta skuid "tinyproxy" jump fence');
    expect(fence?.content).toContain('169.254.0.0/16');
    const commands = doc.runcmd.map((c) => c.join(' '));
    expect(commands.indexOf('systemctl restart nftables')).toBeLessThan(
      commands.indexOf('systemctl restart tinyproxy'),
    );
    expect(commands.indexOf('systemctl restart nftables')).toBeGreaterThanOrEqual(0);
    expect(directives.filter(([k]) => k === 'ConnectPort')).toEqual([
      ['ConnectPort', '80'],
      ['ConnectPort', '443'],
    ]);
  });

  it('the readiness script retries the PUT, and only once tinyproxy and its TLS listener are active', () => {
    const script = doc.write_files.find((f) => f.path === READY_SCRIPT);
    expect(script).toMatchObject({ permissions: '0755', owner: 'root:root' });
    expect(script?.content).toContain(`for attempt in $(seq 1 ${READY_ATTEMPTS}); do`);
    expect(script?.content).toMatch(
      new RegExp(
        `systemctl is-active --quiet tinyproxy egress-tls.service && curl .*--data 8443 .*guest-attributes/${READY_ATTRIBUTE}`,
      ),
    );
  });

  it('refuses credentials tinyproxy could not parse (it would run without auth), without echoing them', () => {
    const bad = { username: 'u', password: 'has space' };
    expect(() =>
      buildUserData({ instance: 'i', proxy: 'p', port: 1, credentials: bad, egress: DEFAULT_EGRESS_POLICY }),
    ).toThrow(PermanentError);
    expect(() =>
      buildUserData({ instance: 'i', proxy: 'p', port: 1, credentials: bad, egress: DEFAULT_EGRESS_POLICY }),
    ).not.toThrow(/has space/);
  });
});

describe('instanceResource', () => {
  const options = parseGcpOptions({ project: 'p-project', zone: 'us-central1-a', spot: true }, 'config.providers.0');
  const placement = resolveGcpPlacement({}, options);
  const spec = {
    name: 'ep-eu-1-3f2a9c1b',
    proxy: 'eu-1',
    installationId: 'prod',
    specHash: '0123456789abcdef',
    port: 0,
    placement,
    credentials,
  };
  const body = instanceResource(spec, placement, 'gce', 3128, DEFAULT_EGRESS_POLICY);

  it('carries the user-data, guest attributes, ownership labels, an ephemeral external IP and no service account', () => {
    const keys = (body.metadata?.items ?? []).map((i) => i.key);
    expect(keys).toEqual(['user-data', 'enable-guest-attributes']);
    expect(body.labels).toEqual({
      'egress-managed': 'true',
      'egress-installation': 'prod',
      'egress-provider': 'gce',
      'egress-proxy': 'eu-1',
      'egress-spec': '0123456789abcdef',
      'egress-port': '3128',
    });
    expect(body.networkInterfaces?.[0]?.accessConfigs).toEqual([{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' }]);
    expect(body.serviceAccounts).toEqual([]);
    expect(body.disks?.[0]).toMatchObject({ boot: true, autoDelete: true });
    expect(body.scheduling).toMatchObject({ provisioningModel: 'SPOT', instanceTerminationAction: 'DELETE' });
    expect(body.tags).toEqual({ items: ['egress-proxy'] });
  });

  it('refuses a label value GCE would refuse', () => {
    expect(() =>
      instanceResource({ ...spec, specHash: 'Not.Valid' }, placement, 'gce', 3128, DEFAULT_EGRESS_POLICY),
    ).toThrow(PermanentError);
  });
});
