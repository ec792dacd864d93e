/** The relay's configuration: a YAML/JSON file named by EGRESS_RELAY_CONFIG, or the embedded local default. */
import path from 'node:path';
import { z } from 'zod';
import { TOPICS } from '../shared/bus/topics.js';
import { echoRefusal, localEgressPolicy } from '../shared/config/egress-policy.js';
import { dnsLabel } from '../shared/domain/names.js';
import { toValidationError } from '../shared/domain/proxy.js';
import { unsafeJson } from '../shared/domain/text.js';
import { deepFreeze } from '../shared/freeze.js';
import { ValidationError } from '../shared/errors.js';
import { readConfigFile } from '../shared/config/config-file.js';
import { kvmBackendSchema } from './backends/kvm/index.js';
import { seconds } from './backends/option-fields.js';
import { processBackendSchema } from './backends/process/index.js';
import { parseIpv4Range, type Ipv4Range } from './backends/process/egress.js';

type Env = Record<string, string | undefined>;

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
  if (file) return parseRelayConfig(readConfigFile(file, 'EGRESS_RELAY_CONFIG'), env);
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
