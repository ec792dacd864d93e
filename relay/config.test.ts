/** Relay configuration: the embedded default, overrides, files, and errors that name the field. */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ValidationError } from '../shared/errors.js';
import {
  LOCAL_RELAY_CONFIG,
  loadRelayConfig,
  parseRelayConfig,
  relayConfigSchema,
  relayStatePath,
  LOCAL_RUN_AS_ENV,
  STACK_PORTS_ENV,
} from './config.js';

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    if (err instanceof ValidationError) return err.field;
    throw err;
  }
  throw new Error('expected a ValidationError');
}

describe('loadRelayConfig', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'egress-relay-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('returns the frozen local default', () => {
    const config = loadRelayConfig({});
    expect(config).toMatchObject({ relay: 'local', subscription: 'relay-commands-local', installationId: 'local' });
    expect(config.backends[0]).toMatchObject({ provider: 'local', type: 'process', portRange: [20000, 20999] });
    expect(Object.isFrozen(config.backends[0])).toBe(true);
    expect(relayStatePath(config)).toBe(path.resolve('.egress/relay-state/local/relay-commands.json'));
  });

  it('gives the local default two process providers with their own ports and egress ranges', () => {
    const config = loadRelayConfig({});
    expect(config.backends.map((b) => [b.provider, b.type === 'process' && b.egressAddresses])).toEqual([
      ['local', '127.1.0.0/16'],
      ['local-b', '127.2.0.0/16'],
    ]);
    expect(config.backends[1]).toMatchObject({ portRange: [22000, 22999] });
    // Each its own state directory: a fault in one (its health check) is not a fault in the other.
    expect(config.backends.map((b) => b.stateDir)).toEqual([
      '.egress/relay-state/local',
      '.egress/relay-state/local-b',
    ]);
  });

  it('moves the local default port ranges by EGRESS_PORT_OFFSET, so two local stacks do not share a forwarder port', () => {
    const config = loadRelayConfig({ EGRESS_PORT_OFFSET: '700' });
    expect(config.backends.map((b) => b.type === 'process' && b.portRange)).toEqual([
      [20700, 21699],
      [22700, 23699],
    ]);
    expect(() => loadRelayConfig({ EGRESS_PORT_OFFSET: '-1' })).toThrow(/EGRESS_PORT_OFFSET/);
  });

  it('names egressAddresses when it is not a range, or overlaps another provider', () => {
    const backend = (provider: string, egressAddresses: string) => ({
      provider,
      type: 'process',
      stateDir: '/tmp/x',
      bindAddresses: ['127.0.0.1'],
      portRange: [1, 2],
      egressAddresses,
    });
    const relay =
      (...backends: unknown[]) =>
      () =>
        parseRelayConfig({ ...LOCAL_RELAY_CONFIG, echoUrl: 'http://echo.example.com/', backends });
    expect(fieldOf(relay(backend('a', '127.1.0.0')))).toBe('relay.backends.0.egressAddresses');
    expect(fieldOf(relay(backend('a', '127.1.0.9/16')))).toBe('relay.backends.0.egressAddresses');
    expect(fieldOf(relay(backend('a', '127.1.0.0/16'), backend('b', '127.1.2.0/24')))).toBe(
      'relay.backends.1.egressAddresses',
    );
    expect(relay(backend('a', '127.1.0.0/16'), backend('b', '127.2.0.0/16'))()).toBeDefined();
  });

  it.each([
    ['tinyproxyPath', 'tinyproxy'],
    ['stunnelPath', ''],
    ['startTimeoutSeconds', 0],
  ])('names a bad process option, %s', (field, value) => {
    const backend = { ...LOCAL_RELAY_CONFIG.backends[0], [field]: value };
    const relay = () =>
      parseRelayConfig({ ...LOCAL_RELAY_CONFIG, echoUrl: 'http://echo.example.com/', backends: [backend] });
    expect(fieldOf(relay)).toBe(`relay.backends.0.${field}`);
  });

  it('applies the environment overrides', () => {
    const config = loadRelayConfig({
      GOOGLE_CLOUD_PROJECT: 'p1',
      EGRESS_ECHO_URL: 'http://10.0.0.1:9000/',
      EGRESS_RELAY_STATE_DIR: '/tmp/relay-x',
    });
    expect(config).toMatchObject({ project: 'p1', echoUrl: 'http://10.0.0.1:9000/' });
    // Each backend in its own directory under it, the relay's ledger in it.
    expect(config.backends.map((b) => b.stateDir)).toEqual(['/tmp/relay-x/local', '/tmp/relay-x/local-b']);
    expect(relayStatePath(config)).toBe('/tmp/relay-x/relay-commands.json');
    expect(loadRelayConfig({ EGRESS_PROJECT: 'p2', GOOGLE_CLOUD_PROJECT: 'p1' }).project).toBe('p2');
  });

  it('reads a YAML file', async () => {
    const file = path.join(dir, 'relay.yaml');
    await writeFile(
      file,
      [
        'relay: onprem-1',
        'project: prod',
        'subscription: relay-commands-onprem-1',
        'reportsTopic: relay-reports',
        'echoUrl: https://echo.example.com/',
        'probeIntervalSeconds: 30',
        'reportIntervalSeconds: 30',
        'probeTimeoutSeconds: 5',
        'installationId: prod',
        'stateDir: /var/lib/egress-relay',
        'backends:',
        '  - { provider: host-a, type: process, stateDir: /var/lib/egress-relay/a, bindAddresses: [0.0.0.0], advertiseHost: 192.0.2.10, portRange: [3128, 3228] }',
      ].join('\n'),
    );
    const config = loadRelayConfig({ EGRESS_RELAY_CONFIG: file });
    expect(config.relay).toBe('onprem-1');
    expect(relayStatePath(config)).toBe('/var/lib/egress-relay/relay-commands.json');
  });

  it('names the file when it cannot be read', () => {
    expect(fieldOf(() => loadRelayConfig({ EGRESS_RELAY_CONFIG: path.join(dir, 'missing.yaml') }))).toBe(
      'EGRESS_RELAY_CONFIG',
    );
  });

  const withBackend = (backend: Record<string, unknown>) => ({
    ...LOCAL_RELAY_CONFIG,
    backends: [{ ...LOCAL_RELAY_CONFIG.backends[0], ...backend }],
  });

  it.each([
    ['an inverted port range', withBackend({ portRange: [21000, 20000] }), 'relay.backends.0.portRange'],
    ['a port out of range', withBackend({ portRange: [0, 10] }), 'relay.backends.0.portRange.0'],
    ['an unknown backend type', withBackend({ type: 'vmware' }), 'relay.backends.0.type'],
    [
      'a bind address that is not an IP',
      withBackend({ bindAddresses: ['localhost'] }),
      'relay.backends.0.bindAddresses.0',
    ],
    [
      'a wildcard bind without advertiseHost',
      withBackend({ bindAddresses: ['0.0.0.0'] }),
      'relay.backends.0.advertiseHost',
    ],
    ['an unknown key', { ...LOCAL_RELAY_CONFIG, color: 'blue' }, 'relay'],
    ['a bad relay id', { ...LOCAL_RELAY_CONFIG, relay: 'Local_1' }, 'relay.relay'],
    [
      'duplicate providers',
      { ...LOCAL_RELAY_CONFIG, backends: [LOCAL_RELAY_CONFIG.backends[0], LOCAL_RELAY_CONFIG.backends[0]] },
      'relay.backends',
    ],
  ])('rejects %s naming the field', (_name, raw, field) => {
    expect(fieldOf(() => parseRelayConfig(raw))).toBe(field);
  });

  const kvm = (host: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
    ...LOCAL_RELAY_CONFIG,
    // An echo the default egress policy admits (a port other than 80 or 443 is refused: config.ts).
    echoUrl: 'http://echo.example.com/',
    backends: [
      {
        provider: 'lab',
        type: 'kvm',
        stateDir: '/tmp/kvm',
        hosts: {
          beelink: {
            uri: 'qemu+ssh://relay@beelink/system',
            pool: 'default',
            baseImage: 'b.qcow2',
            network: 'default',
            ...host,
          },
        },
        ...extra,
      },
    ],
  });

  it('reads a kvm backend with its defaults, and keeps the relay state in its stateDir', () => {
    const config = parseRelayConfig(kvm({}));
    expect(config.backends[0]).toMatchObject({
      type: 'kvm',
      defaultPort: 3128,
      sizes: {},
      hosts: {
        beelink: { domainType: 'kvm', readySignal: 'agent', vcpus: 1, memoryMiB: 512, baseImageFormat: 'qcow2' },
      },
    });
    expect(config.backends[0]?.type === 'kvm' && config.backends[0].hosts['beelink']?.boot).toBeUndefined();
    const direct = parseRelayConfig(kvm({ domainType: 'qemu', boot: { kernel: '/img/vmlinuz' } }));
    expect(direct.backends[0]).toMatchObject({
      hosts: {
        beelink: { domainType: 'qemu', boot: { kernel: '/img/vmlinuz', cmdline: 'root=/dev/vda rw console=ttyS0' } },
      },
    });
    expect(relayStatePath(config)).toBe('/tmp/kvm/relay-commands.json');
  });

  it.each([
    ['a host with both network and bridge', kvm({ bridge: 'br0' }), 'relay.backends.0.hosts.beelink.network'],
    ['a host with neither network nor bridge', kvm({ network: undefined }), 'relay.backends.0.hosts.beelink.network'],
    [
      'a URI with an unknown transport',
      kvm({ uri: 'qemu+carrier-pigeon://h/system' }),
      'relay.backends.0.hosts.beelink.uri',
    ],
    ['a host without a pool', kvm({ pool: undefined }), 'relay.backends.0.hosts.beelink.pool'],
    ['an unknown domain type', kvm({ domainType: 'xen' }), 'relay.backends.0.hosts.beelink.domainType'],
    ['a host name that is not a label', kvm({}, { hosts: { Bee_Link: {} } }), 'relay.backends.0.hosts.Bee_Link'],
    ['no hosts', kvm({}, { hosts: {} }), 'relay.backends.0.hosts'],
    ['a size without memory', kvm({}, { sizes: { small: { vcpus: 1 } } }), 'relay.backends.0.sizes.small.memoryMiB'],
    ['a relative kernel path', kvm({ boot: { kernel: 'vmlinuz' } }), 'relay.backends.0.hosts.beelink.boot.kernel'],
    ['an unknown boot key', kvm({ boot: { kernel: '/k', firmware: 'uefi' } }), 'relay.backends.0.hosts.beelink.boot'],
    ['an unknown ready signal', kvm({ readySignal: 'ping' }), 'relay.backends.0.hosts.beelink.readySignal'],
    ['a relative console log dir', kvm({ consoleLogDir: 'logs' }), 'relay.backends.0.hosts.beelink.consoleLogDir'],
  ])('rejects a kvm backend with %s naming the field', (_name, raw, field) => {
    expect(fieldOf(() => parseRelayConfig(raw))).toBe(field);
  });
});

describe('the embedded local config and the egress fence', () => {
  it("its proxies may reach every loopback port but the stack's own", () => {
    const config = loadRelayConfig({ [STACK_PORTS_ENV]: '8080,8085,8089-8179,8899' });
    for (const backend of config.backends) {
      const loopback = backend.egress.allow.find((a) => a.cidr === '127.0.0.0/8');
      expect(loopback?.ports).toEqual([
        [1, 8079],
        [8081, 8084],
        [8086, 8088],
        [8180, 8898],
        [8900, 65535],
      ]);
    }
  });

  it('runs each embedded backend as a uid of its own from EGRESS_LOCAL_RUN_AS (its kernel fence), and as the relay without it', () => {
    expect(
      loadRelayConfig({ [LOCAL_RUN_AS_ENV]: '100800' }).backends.map((b) =>
        b.type === 'process' ? b.runAs : 'not a process backend',
      ),
    ).toEqual([
      { uid: 100800, gid: 100800 },
      { uid: 100801, gid: 100801 },
    ]);
    expect(loadRelayConfig({}).backends.map((b) => (b.type === 'process' ? b.runAs : 'not a process backend'))).toEqual(
      [undefined, undefined],
    );
    for (const bad of ['', 'root', '0', '1.5', String(2 ** 32 - 2)])
      expect(() => loadRelayConfig({ [LOCAL_RUN_AS_ENV]: bad }), bad).toThrow(
        expect.objectContaining({ field: LOCAL_RUN_AS_ENV }) as unknown,
      );
  });

  it('a bad EGRESS_STACK_PORTS is named', () => {
    expect(() => loadRelayConfig({ [STACK_PORTS_ENV]: '8080,90-80' })).toThrow(
      expect.objectContaining({ field: STACK_PORTS_ENV }) as unknown,
    );
  });

  it('a relay config file without an egress policy gets the safe default: ports 80 and 443, private ranges denied', () => {
    const config = parseRelayConfig({ ...LOCAL_RELAY_CONFIG, echoUrl: 'http://echo.example.com/' });
    expect(config.backends[0]?.egress.ports).toEqual([80, 443]);
    expect(config.backends[0]?.egress.deny).toContain('169.254.0.0/16');
    expect(config.backends[0]?.egress.allow).toEqual([]);
  });
  it('refuses a backend whose egress policy allows the echoUrl port nowhere (every probe would fail), naming it', () => {
    // The embedded local relay config's backends, with the default policy (ports 80 and 443).
    const relay = { ...structuredClone(LOCAL_RELAY_CONFIG), echoUrl: 'http://echo.example.com:8088/' };
    const refused = relayConfigSchema.safeParse(relay);
    expect(refused.error?.issues.map((i) => i.path)).toContainEqual(['backends', 0, 'egress']);
    expect(
      relayConfigSchema.safeParse({ ...relay, echoUrl: 'http://echo.example.com/' }).error?.issues ?? [],
    ).not.toContainEqual(expect.objectContaining({ path: ['backends', 0, 'egress'] }));
  });
});
