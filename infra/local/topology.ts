/** infra/topology.yaml: its schema, loading it, and the schedules it implies (`apply-topology.ts` applies it). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Config } from '../../shared/config/schema.js';
import { toValidationError } from '../../shared/domain/proxy.js';
import { dnsLabel } from '../../shared/domain/names.js';
import { ValidationError } from '../../shared/errors.js';

/** The topology file's path relative to the repository root. */
export const TOPOLOGY_FILE = join('infra', 'topology.yaml');

/** A Pub/Sub topic or subscription id (letters first, 3–255 characters, not `goog…`). */
const resourceId = z
  .string()
  .regex(/^(?!goog)[A-Za-z][-A-Za-z0-9_.~+%]{2,254}$/, 'must be a valid Pub/Sub resource id');
const backoffSeconds = z.number().min(0).max(600);

const retryPolicySchema = z
  .strictObject({ minimumBackoffSeconds: backoffSeconds, maximumBackoffSeconds: backoffSeconds })
  .refine((r) => r.minimumBackoffSeconds <= r.maximumBackoffSeconds, {
    message: 'must not be below minimumBackoffSeconds',
    path: ['maximumBackoffSeconds'],
  });
const deadLetterSchema = z.strictObject({
  topic: resourceId,
  maxDeliveryAttempts: z.number().int().min(5).max(100),
});
const ackDeadlineSeconds = z.number().int().min(10).max(600);

const subscriptionSchema = z.strictObject({
  name: resourceId,
  topic: resourceId,
  /** The function that receives this subscription by push; absent for a pull subscription. */
  push: dnsLabel.optional(),
  ackDeadlineSeconds,
  retryPolicy: retryPolicySchema.optional(),
  deadLetter: deadLetterSchema.optional(),
  filter: z.string().min(1).optional(),
});

/** The schema of infra/topology.yaml (YAML anchors are resolved before validation). */
export const topologySchema = z
  .strictObject({
    topics: z.array(resourceId).min(1),
    /** Anchor definitions shared by the entries below; not applied by themselves. */
    retryPolicy: retryPolicySchema.optional(),
    deadLetter: deadLetterSchema.optional(),
    subscriptions: z.array(subscriptionSchema),
    relaySubscription: z.strictObject({
      namePrefix: z.string().regex(/^[A-Za-z][-A-Za-z0-9_.~+%]*$/),
      topic: resourceId,
      filterAttribute: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
      ackDeadlineSeconds,
      retryPolicy: retryPolicySchema.optional(),
      deadLetter: deadLetterSchema.optional(),
    }),
    schedules: z.array(
      z.strictObject({
        name: dnsLabel,
        topic: resourceId,
        /** The config key (a number of seconds) that sets the interval. */
        intervalFrom: z.string().min(1),
        data: z.record(z.string(), z.unknown()).default({}),
      }),
    ),
    functions: z.record(
      dnsLabel,
      z.strictObject({
        memoryMb: z.number().int().min(128),
        timeoutSeconds: z.number().int().min(1).max(540),
        /** HTTP-triggered instead of push-triggered. */
        http: z.boolean().default(false),
        /**
         * Calls providers (create, get, delete, list, check): Terraform gives these only the provider
         * secrets, the VPC path and the providers' permissions, and infra/kubernetes/rbac.yaml binds them.
         */
        callsProviders: z.boolean().default(false),
      }),
    ),
  })
  .superRefine((t, ctx) => {
    const issue = (path: (string | number)[], message: string) => ctx.addIssue({ code: 'custom', path, message });
    const topics = new Set(t.topics);
    const needTopic = (topic: string, path: (string | number)[]) => {
      if (!topics.has(topic)) issue(path, `unknown topic "${topic}"`);
    };
    const names = new Set<string>();
    t.subscriptions.forEach((s, i) => {
      needTopic(s.topic, ['subscriptions', i, 'topic']);
      if (s.deadLetter) needTopic(s.deadLetter.topic, ['subscriptions', i, 'deadLetter', 'topic']);
      if (s.push !== undefined && !(s.push in t.functions)) {
        issue(['subscriptions', i, 'push'], `"${s.push}" is not under functions`);
      }
      if (names.has(s.name)) issue(['subscriptions', i, 'name'], 'is used twice');
      if (s.name.startsWith(t.relaySubscription.namePrefix)) {
        issue(['subscriptions', i, 'name'], "must not start with the relays' namePrefix");
      }
      names.add(s.name);
    });
    needTopic(t.relaySubscription.topic, ['relaySubscription', 'topic']);
    if (t.relaySubscription.deadLetter) {
      needTopic(t.relaySubscription.deadLetter.topic, ['relaySubscription', 'deadLetter', 'topic']);
    }
    t.schedules.forEach((s, i) => needTopic(s.topic, ['schedules', i, 'topic']));
  });

export type Topology = z.infer<typeof topologySchema>;
export type TopologySubscription = z.infer<typeof subscriptionSchema>;

/** A scheduler job resolved against the config: publish `data` to `topic` every `intervalSeconds`. */
export interface ScheduledTick {
  name: string;
  topic: string;
  intervalSeconds: number;
  data: Record<string, unknown>;
}

/**
 * Finds infra/topology.yaml by walking up from `start` (works from the sources and from `dist/`).
 *
 * @param start - a directory to start from (default: this module's directory)
 * @throws Error when no ancestor holds infra/topology.yaml
 */
export function findTopologyFile(start = dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = resolve(start); ; dir = dirname(dir)) {
    const candidate = join(dir, TOPOLOGY_FILE);
    if (existsSync(candidate)) return candidate;
    if (dirname(dir) === dir) throw new Error(`no ${TOPOLOGY_FILE} in ${start} or any parent directory`);
  }
}

/**
 * Reads and validates the topology.
 *
 * @param path - the YAML file (default: the repository's infra/topology.yaml)
 * @throws ValidationError naming the field (`topology.subscriptions.2.topic`)
 */
export function loadTopology(path = findTopologyFile()): Topology {
  let raw: unknown;
  try {
    raw = parseYaml(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new ValidationError('topology', `cannot read ${path}: ${String(err)}`, { cause: err });
  }
  return parseTopology(raw);
}

/** Validates an already-decoded topology object. @throws ValidationError naming the field. */
export function parseTopology(raw: unknown): Topology {
  const parsed = topologySchema.safeParse(raw);
  if (!parsed.success) throw toValidationError(parsed.error, 'topology');
  return parsed.data;
}

/**
 * The local push URL for a function listening at `baseUrl`.
 *
 * @example localPushEndpoint('http://127.0.0.1:8091', 'demo-egress', 'proxy-checks')
 * // 'http://127.0.0.1:8091/projects/demo-egress/topics/proxy-checks'
 */
export function localPushEndpoint(baseUrl: string, project: string, topic: string): string {
  return `${baseUrl.replace(/\/+$/, '')}/projects/${project}/topics/${topic}`;
}

/** The distinct functions that receive pushes, in topology order. */
export function pushedFunctions(topology: Topology): string[] {
  return [...new Set(topology.subscriptions.flatMap((s) => (s.push ? [s.push] : [])))];
}

/** The HTTP-triggered functions (the API), in topology order. */
export function httpFunctions(topology: Topology): string[] {
  return Object.entries(topology.functions).flatMap(([name, f]) => (f.http ? [name] : []));
}

/**
 * The scheduler jobs with intervals taken from the config key each one names.
 *
 * @throws ValidationError when `intervalFrom` does not name a positive number in the config
 */
export function scheduleIntervals(topology: Topology, config: Config): ScheduledTick[] {
  const values = new Map<string, unknown>(Object.entries(config));
  return topology.schedules.map((s, i) => {
    const intervalSeconds = values.get(s.intervalFrom);
    if (typeof intervalSeconds !== 'number' || !(intervalSeconds > 0)) {
      throw new ValidationError(
        `topology.schedules.${i}.intervalFrom`,
        `config has no positive number named "${s.intervalFrom}"`,
      );
    }
    return { name: s.name, topic: s.topic, intervalSeconds, data: s.data };
  });
}
