/** The relay's configuration: a YAML/JSON file named by EGRESS_RELAY_CONFIG, or the embedded local default. */
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { dnsLabel } from '../shared/domain/names.js';
import { toValidationError } from '../shared/domain/proxy.js';
import { unsafeJson } from '../shared/domain/text.js';
import { ValidationError } from '../shared/errors.js';

type Env = Record<string, string | undefined>;

const port = z.number().int().min(1).max(65535);
const seconds = z.number().positive();
const ipAddress = z.string().refine((s) => isIP(s) !== 0, 'must be an IPv4 or IPv6 address');
const UNSPECIFIED = new Set(['0.0.0.0', '::']);

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
  })
  .refine((b) => b.advertiseHost !== undefined || !b.bindAddresses.some((a) => UNSPECIFIED.has(a)), {
    message: 'a wildcard bind address (0.0.0.0 or ::) is not reachable: set advertiseHost',
    path: ['advertiseHost'],
  });
export type ProcessBackendConfig = z.infer<typeof processBackendSchema>;

/** One backend per relay-backed provider; a union by `type`, so `kvm` can be added beside `process`. */
export const backendConfigSchema = z.discriminatedUnion('type', [processBackendSchema]);
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
     * restart still refuses stale commands). Defaults to the first process backend's stateDir.
     */
    stateDir: z.string().min(1).optional(),
    backends: z.array(backendConfigSchema).min(1),
  })
  .refine((c) => new Set(c.backends.map((b) => b.provider)).size === c.backends.length, {
    message: 'provider names must be unique',
    path: ['backends'],
  })
  .refine((c) => c.stateDir !== undefined || c.backends.some((b) => b.type === 'process'), {
    message: 'required when no process backend provides a default',
    path: ['stateDir'],
  });

/** The validated, frozen relay configuration. */
export type RelayConfig = Readonly<z.infer<typeof relayConfigSchema>>;

/** The embedded default: relay `local` running the `local` process provider on 127.0.0.1. */
export const LOCAL_RELAY_CONFIG = {
  relay: 'local',
  project: 'demo-egress',
  subscription: 'relay-commands-local',
  reportsTopic: 'relay-reports',
  echoUrl: 'http://127.0.0.1:8088/',
  probeIntervalSeconds: 2,
  reportIntervalSeconds: 2,
  probeTimeoutSeconds: 3,
  installationId: 'local',
  backends: [
    {
      provider: 'local',
      type: 'process',
      stateDir: '.egress/relay-state',
      bindAddresses: ['127.0.0.1'],
      portRange: [20000, 20999],
    },
  ],
};

/**
 * Loads the relay configuration once. Environment overrides: `EGRESS_PROJECT` (or
 * `GOOGLE_CLOUD_PROJECT`), `EGRESS_ECHO_URL`, `EGRESS_INSTALLATION`, and `EGRESS_RELAY_STATE_DIR` (the stateDir of every
 * process backend; they may share it, their records carry the provider).
 *
 * @param env - the environment (tests pass their own)
 * @returns a deeply frozen RelayConfig
 * @throws ValidationError naming the field (`relay.backends.0.portRange`)
 */
export function loadRelayConfig(env: Env = process.env): RelayConfig {
  const file = env['EGRESS_RELAY_CONFIG'];
  const raw = file ? readConfigFile(file) : structuredClone(LOCAL_RELAY_CONFIG);
  return parseRelayConfig(raw, env);
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
  if (stateDir && Array.isArray(merged['backends'])) {
    merged['backends'] = merged['backends'].map((b: unknown) =>
      typeof b === 'object' && b !== null && 'type' in b && b.type === 'process' ? { ...b, stateDir } : b,
    );
  }
  const parsed = relayConfigSchema.safeParse(merged);
  if (!parsed.success) throw toValidationError(parsed.error, 'relay');
  return deepFreeze(parsed.data);
}

/** Where the relay keeps its own state file (the command ledger). */
export function relayStatePath(config: RelayConfig): string {
  const firstProcess = config.backends.find((b) => b.type === 'process');
  const dir = config.stateDir ?? firstProcess?.stateDir ?? '.';
  return path.resolve(dir, 'relay-commands.json');
}

function readConfigFile(file: string): unknown {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ValidationError(
      'EGRESS_RELAY_CONFIG',
      `cannot read ${file}: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
  try {
    return parseYaml(text);
  } catch (err) {
    throw new ValidationError(
      'EGRESS_RELAY_CONFIG',
      `${file} is not valid YAML/JSON: ${err instanceof Error ? err.message : String(err)}`,
    );
  }
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
