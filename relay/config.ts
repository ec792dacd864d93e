/** The relay's configuration: a YAML/JSON file named by EGRESS_RELAY_CONFIG, or the embedded local default. */
import { isIP } from 'node:net';
import path from 'node:path';
import { z } from 'zod';
import { TOPICS } from '../shared/bus/topics.js';
import { echoRefusal, egressPolicySchema, localEgressPolicy } from '../shared/config/egress-policy.js';
import { dnsLabel } from '../shared/domain/names.js';
import { toValidationError } from '../shared/domain/proxy.js';
import { unsafeJson } from '../shared/domain/text.js';
import { deepFreeze } from '../shared/freeze.js';
import { ValidationError } from '../shared/errors.js';
import { readConfigFile } from './config-file.js';
import { parseIpv4Range, type Ipv4Range } from './backends/process/egress.js';
import { parseLibvirtUri } from './libvirt/index.js';

type Env = Record<string, string | undefined>;

const port = z.number().int().min(1).max(65535);
const seconds = z.number().positive();
const absolutePath = z
  .string()
  .max(4096)
  .refine((s) => path.isAbsolute(s), 'must be an absolute path on the host');
const ipAddress = z.string().refine((s) => isIP(s) !== 0, 'must be an IPv4 or IPv6 address');
const UNSPECIFIED = new Set(['0.0.0.0', '::']);
/** An IPv4 range in CIDR notation (`127.1.0.0/16`). */
const ipv4Range = z.string().superRefine((cidr, ctx) => {
  const range = parseIpv4Range(cidr);
  if (typeof range === 'string') ctx.addIssue({ code: 'custom', message: range });
});

/** A `process` backend: proxies are processes on the relay's own host. */
export const processBackendSchema = z
  .strictObject({
    provider: dnsLabel,
    type: z.literal('process'),
    /** Instance state and logs; relative paths are resolved against the working directory. */
    stateDir: z.string().min(1),
    /** Addresses proxies may listen on; the first is the default placement. */
    bindAddresses: z.array(ipAddress).min(1),
    portRange: z.tuple([port, port]).refine(([lo, hi]) => lo <= hi, 'must be [low, high] with low <= high'),
    /** The IP clients and the prober use; required when a bind address is a wildcard. */
    advertiseHost: z.string().min(1).optional(),
    /**
     * Each proxy's own outgoing source address (its egress IP) comes from this IPv4 range; every
     * address must be local to the host (all of 127.0.0.0/8 is, on Linux). Absent: a routable bind
     * address is the source, else the OS picks.
     */
    egressAddresses: ipv4Range.optional(),
    /** Where the proxies may connect (shared/config/egress-policy.ts); absent: the safe default. */
    egress: egressPolicySchema.prefault({}),
    /**
     * The user (and group) the proxy processes run as, and whose sockets the backend's kernel fence
     * matches: the relay loads the fence table as it starts (docs/operations.md, "Egress fence").
     * Needs a relay that runs as root. Absent: proxies run as the relay's user with no kernel
     * fence, only tinyproxy's ConnectPort lines (docs/operations.md, "Egress fence").
     */
    runAs: z
      .strictObject({
        uid: z
          .number()
          .int()
          .min(1)
          .max(2 ** 32 - 2),
        gid: z
          .number()
          .int()
          .min(1)
          .max(2 ** 32 - 2),
      })
      .optional(),
  })
  .refine((b) => b.advertiseHost !== undefined || !b.bindAddresses.some((a) => UNSPECIFIED.has(a)), {
    message: 'a wildcard bind address (0.0.0.0 or ::) is not reachable: set advertiseHost',
    path: ['advertiseHost'],
  });
export type ProcessBackendConfig = z.infer<typeof processBackendSchema>;

/** A libvirt URI the client can dial (`qemu+ssh://admin@beelink/system`); the error names the bad part. */
const libvirtUri = z
  .string()
  .min(1)
  .superRefine((uri, ctx) => {
    try {
      parseLibvirtUri(uri);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
    }
  });

/** One libvirt host of a `kvm` backend. */
export const kvmHostSchema = z
  .strictObject({
    /** Where the domains live (`qemu+ssh://admin@beelink/system`, `qemu:///system`). */
    uri: libvirtUri,
    /** Where the storage pool lives when another endpoint serves it (`storage:///system`); default `uri`. */
    storageUri: libvirtUri.optional(),
    /** The storage pool that holds the base image, the overlays and the seeds. */
    pool: z.string().min(1).max(255),
    /** The base image: a volume of `pool` every overlay is backed by (a cloud image with cloud-init). */
    baseImage: z.string().min(1).max(255),
    baseImageFormat: z.enum(['qcow2', 'raw']).default('qcow2'),
    /** A libvirt network (leases known to libvirt) or a host bridge: exactly one. */
    network: z.string().min(1).max(255).optional(),
    bridge: z.string().min(1).max(255).optional(),
    /**
     * The domain type: `kvm` (hardware acceleration), `qemu` (emulated by TCG: hosts without a
     * usable `/dev/kvm`, such as nested machines) or `test` (libvirt's test driver). Never derived
     * from `/dev/kvm` existing: libvirt advertises `kvm` where the device cannot run a guest.
     */
    domainType: z.enum(['kvm', 'qemu', 'test']).default('kvm'),
    /**
     * How the guest boots: absent, from the base image's own boot loader (a distribution's cloud
     * image); set, by direct kernel boot of these host paths (an image without a boot loader).
     */
    boot: z
      .strictObject({
        kernel: absolutePath,
        initrd: absolutePath.optional(),
        cmdline: z.string().max(4096).default('root=/dev/vda rw console=ttyS0'),
      })
      .optional(),
    /**
     * When a guest counts as Running: `agent` once the guest says its proxy serves (cloud-init's last
     * step writes a marker the backend reads through the QEMU guest agent); `none` as soon as it has
     * an address (images without the agent; probes then judge it after the startup grace).
     */
    readySignal: z.enum(['agent', 'none']).default('agent'),
    /**
     * A host directory where each guest's serial console is kept (`<name>-serial.log`), e.g.
     * `/var/log/libvirt/qemu` of a `qemu:///system` host; it must exist. Absent: no console log.
     */
    consoleLogDir: absolutePath.optional(),
    /** Defaults for a placement that names no size. */
    vcpus: z.number().int().min(1).max(64).default(1),
    memoryMiB: z.number().int().min(128).max(262_144).default(512),
  })
  .refine((h) => (h.network === undefined) !== (h.bridge === undefined), {
    message: 'set exactly one of network or bridge',
    path: ['network'],
  });
export type KvmHostConfig = z.infer<typeof kvmHostSchema>;

/** A named machine size a placement may ask for (`placement.size`). */
export const kvmSizeSchema = z.strictObject({
  vcpus: z.number().int().min(1).max(64),
  memoryMiB: z.number().int().min(128).max(262_144),
  /** The overlay's virtual size; at least the base image's (cloud-init grows the root filesystem). */
  diskGiB: z.number().int().min(1).max(4096).optional(),
});
export type KvmSize = z.infer<typeof kvmSizeSchema>;

/** A `kvm` backend: proxies are libvirt guests on the configured hosts. */
export const kvmBackendSchema = z.strictObject({
  provider: dnsLabel,
  type: z.literal('kvm'),
  /** The per-instance credentials the relay probes with (files of mode 0600). */
  stateDir: z.string().min(1),
  /** Hosts by name (the `placement.host` a proxy names). */
  hosts: z.record(dnsLabel, kvmHostSchema).refine((h) => Object.keys(h).length > 0, 'at least one host is required'),
  /** Machine sizes by name (the `placement.size` a proxy names). */
  sizes: z.record(dnsLabel, kvmSizeSchema).default({}),
  /** The proxy port in the guests when a proxy asks for none. */
  defaultPort: port.default(3128),
  /** How long dialling a host may take. */
  connectTimeoutSeconds: seconds.default(10),
  /** How long one libvirt call may take (an upload included). */
  callTimeoutSeconds: seconds.default(30),
  /**
   * How long after its creation a guest may fail its probes before they count: cloud-init installs
   * the proxy after the guest has an address. Failures before the first success in this window are
   * not reported, so the proxy stays Provisioning instead of being replaced while it boots.
   */
  startupGraceSeconds: z.number().min(0).default(600),
  /** Where the guests' proxies may connect, enforced in each guest (shared/config/egress-policy.ts). */
  egress: egressPolicySchema.prefault({}),
});
export type KvmBackendConfig = z.infer<typeof kvmBackendSchema>;

/** One backend per relay-backed provider; a union by `type`. */
export const backendConfigSchema = z.discriminatedUnion('type', [processBackendSchema, kvmBackendSchema]);
export type BackendConfig = z.infer<typeof backendConfigSchema>;

export const relayConfigSchema = z
  .strictObject({
    /** This relay's id: commands carry it (attribute and body), reports name it. */
    relay: dnsLabel,
    project: z.string().min(1),
    /** The pull subscription on `relay-commands` for this relay. */
    subscription: z.string().min(1),
    reportsTopic: z.string().min(1),
    /** Probes fetch this through every proxy; it answers `{"ip": "..."}`. */
    echoUrl: z.url(),
    probeIntervalSeconds: seconds,
    reportIntervalSeconds: seconds,
    probeTimeoutSeconds: seconds,
    /** Must match the functions' installation id: only its instances are listed and created. */
    installationId: dnsLabel,
    /**
     * The relay's own state (`relay-commands.json`: the last command applied per instance, so a
     * restart still refuses stale commands). Defaults to the first backend's stateDir.
     */
    stateDir: z.string().min(1).optional(),
    backends: z.array(backendConfigSchema).min(1),
  })
  .refine((c) => new Set(c.backends.map((b) => b.provider)).size === c.backends.length, {
    message: 'provider names must be unique',
    path: ['backends'],
  })
  .superRefine((c, ctx) => {
    // A fence that refuses the echo endpoint fails every probe: each proxy would be replaced forever.
    c.backends.forEach((b, i) => {
      const refusal = echoRefusal(b.egress, c.echoUrl);
      if (refusal)
        ctx.addIssue({ code: 'custom', message: `egress policy ${refusal}`, path: ['backends', i, 'egress'] });
    });
    // Two providers handing out one address would give two proxies one egress IP.
    const ranges: [number, Ipv4Range][] = [];
    c.backends.forEach((b, i) => {
      const range = b.type === 'process' && b.egressAddresses ? parseIpv4Range(b.egressAddresses) : undefined;
      if (range !== undefined && typeof range !== 'string') ranges.push([i, range]);
    });
    for (const [i, a] of ranges) {
      const other = ranges.find(([j, b]) => j < i && a.base < b.base + b.size && b.base < a.base + a.size);
      if (other)
        ctx.addIssue({
          code: 'custom',
          message: `overlaps the egressAddresses of backends.${other[0]}`,
          path: ['backends', i, 'egressAddresses'],
        });
    }
  });

/** The validated, frozen relay configuration. */
export type RelayConfig = Readonly<z.infer<typeof relayConfigSchema>>;

/**
 * The embedded default: relay `local` running two process providers on 127.0.0.1, `local` and
 * `local-b`, each proxy leaving from its own loopback address (127.1.x.y and 127.2.x.y), each
 * provider with its own state directory (a fault in one is not a fault in the other).
 */
export const LOCAL_RELAY_CONFIG = {
  relay: 'local',
  project: 'demo-egress',
  subscription: 'relay-commands-local',
  reportsTopic: TOPICS.relayReports,
  echoUrl: 'http://127.0.0.1:8088/',
  probeIntervalSeconds: 2,
  reportIntervalSeconds: 2,
  probeTimeoutSeconds: 3,
  installationId: 'local',
  backends: [
    {
      provider: 'local',
      type: 'process',
      stateDir: '.egress/relay-state/local',
      bindAddresses: ['127.0.0.1'],
      portRange: [20000, 20999],
      egressAddresses: '127.1.0.0/16',
    },
    {
      provider: 'local-b',
      type: 'process',
      stateDir: '.egress/relay-state/local-b',
      bindAddresses: ['127.0.0.1'],
      portRange: [22000, 22999],
      egressAddresses: '127.2.0.0/16',
    },
  ],
};

/**
 * The local stack's own ports (`8080-8087,8089-8179,8899`: API, functions and their fronts,
 * emulators, gateway), which its proxies must never reach; the stack sets it for its relay.
 */
export const STACK_PORTS_ENV = 'EGRESS_STACK_PORTS';

/**
 * Set by the local stack when it runs as root with `nft`: the first of the uids the embedded
 * backends' proxies run as (`runAs`, one uid per backend, in order), so that the kernel fence of
 * each keeps its proxies off the stack's own ports, plain requests included.
 */
export const LOCAL_RUN_AS_ENV = 'EGRESS_LOCAL_RUN_AS';

/**
 * The uid the embedded backend number `index` runs its proxies as, from `EGRESS_LOCAL_RUN_AS`.
 *
 * @throws ValidationError naming the variable when it is not a uid with room for every backend
 */
export function localRunAs(value: string, index: number): { uid: number; gid: number } {
  const first = Number(value);
  const highest = 2 ** 32 - 1 - LOCAL_RELAY_CONFIG.backends.length;
  if (value.trim() === '' || !Number.isInteger(first) || first < 1 || first > highest)
    throw new ValidationError(LOCAL_RUN_AS_ENV, `"${value}" is not a uid from 1 to ${highest}`);
  return { uid: first + index, gid: first + index };
}

/**
 * The ports `EGRESS_STACK_PORTS` lists.
 *
 * @throws ValidationError naming the variable when an entry is not a port or a range of ports
 */
export function parseStackPorts(value: string): number[] {
  return value
    .split(',')
    .filter((item) => item.trim() !== '')
    .flatMap((item) => {
      const [lo, hi = lo] = item.trim().split('-').map(Number);
      if (!Number.isInteger(lo) || !Number.isInteger(hi) || lo! < 1 || hi! > 65535 || lo! > hi!)
        throw new ValidationError(STACK_PORTS_ENV, `"${item}" is not a port or a range low-high`);
      return Array.from({ length: hi! - lo! + 1 }, (_, i) => lo! + i);
    });
}

/**
 * Loads the relay configuration once. The embedded default's proxies get the local stack's egress
 * policy (every loopback port but `EGRESS_STACK_PORTS`), run as the uids `EGRESS_LOCAL_RUN_AS`
 * starts (when set), and its port ranges move by `EGRESS_PORT_OFFSET`. Environment overrides: `EGRESS_PROJECT` (or `GOOGLE_CLOUD_PROJECT`),
 * `EGRESS_ECHO_URL`, `EGRESS_INSTALLATION`, and `EGRESS_RELAY_STATE_DIR` (the relay's stateDir;
 * each backend's becomes `<dir>/<provider>`, so no two backends share one and one backend's broken
 * state directory fails only that backend's health check).
 *
 * @param env - the environment (tests pass their own)
 * @returns a deeply frozen RelayConfig
 * @throws ValidationError naming the field (`relay.backends.0.portRange`)
 */
export function loadRelayConfig(env: Env = process.env): RelayConfig {
  const file = env['EGRESS_RELAY_CONFIG'];
  if (file) return parseRelayConfig(readConfigFile(file), env);
  const egress = localEgressPolicy(parseStackPorts(env[STACK_PORTS_ENV] ?? ''));
  const raw = structuredClone(LOCAL_RELAY_CONFIG);
  // Each backend's forwarder listens on the first port of its range: a stack started with a port
  // offset shifts its ranges by it, so that two local stacks on one machine do not collide there.
  const offset = Number(env['EGRESS_PORT_OFFSET'] ?? 0);
  if (!Number.isInteger(offset) || offset < 0 || offset > 9000)
    throw new ValidationError('EGRESS_PORT_OFFSET', 'must be an integer from 0 to 9000');
  const runAs = env[LOCAL_RUN_AS_ENV];
  const backends = raw.backends.map((b, i) => ({
    ...b,
    egress,
    portRange: b.portRange.map((p) => p + offset),
    ...(runAs === undefined ? {} : { runAs: localRunAs(runAs, i) }),
  }));
  return parseRelayConfig({ ...raw, backends }, env);
}

/** Validates a decoded relay configuration and applies the environment overrides. */
export function parseRelayConfig(raw: unknown, env: Env = {}): RelayConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new ValidationError('relay', 'must be an object');
  const unsafe = unsafeJson(raw);
  if (unsafe) throw new ValidationError(`relay.${unsafe.field}`, unsafe.reason);
  const merged: Record<string, unknown> = { ...raw };
  const project = env['EGRESS_PROJECT'] ?? env['GOOGLE_CLOUD_PROJECT'];
  if (project) merged['project'] = project;
  if (env['EGRESS_ECHO_URL']) merged['echoUrl'] = env['EGRESS_ECHO_URL'];
  if (env['EGRESS_INSTALLATION']) merged['installationId'] = env['EGRESS_INSTALLATION'];
  const stateDir = env['EGRESS_RELAY_STATE_DIR'];
  if (stateDir) merged['stateDir'] = stateDir;
  if (stateDir && Array.isArray(merged['backends'])) {
    // A backend without a valid provider name is refused by the schema below, naming the field.
    merged['backends'] = merged['backends'].map((b: unknown) =>
      typeof b === 'object' && b !== null && 'provider' in b && typeof b.provider === 'string'
        ? { ...b, stateDir: path.join(stateDir, b.provider) }
        : b,
    );
  }
  const parsed = relayConfigSchema.safeParse(merged);
  if (!parsed.success) throw toValidationError(parsed.error, 'relay');
  return deepFreeze(parsed.data);
}

/** Where the relay keeps its own state file (the command ledger). */
export function relayStatePath(config: RelayConfig): string {
  const dir = config.stateDir ?? config.backends[0]?.stateDir ?? '.';
  return path.resolve(dir, 'relay-commands.json');
}
