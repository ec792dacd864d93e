/** infra/topology.yaml: its schema, loading it, applying it to Pub/Sub, and the schedules it implies. */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CreateSubscriptionOptions, PubSub } from '@google-cloud/pubsub';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Config } from '../../shared/config/schema.js';
import { dnsLabel } from '../../shared/domain/names.js';
import { toValidationError } from '../../shared/domain/proxy.js';
import { ValidationError } from '../../shared/errors.js';

/** The topology file's path relative to the repository root. */
export const TOPOLOGY_FILE = join('infra', 'topology.yaml');
/** gRPC status ALREADY_EXISTS, as the Pub/Sub client reports it in `err.code`. */
const ALREADY_EXISTS = 6;

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

/** How `applyTopology` reaches the functions and which relays exist. */
export interface ApplyTopologyOptions {
  /**
   * The push URL of a function for a topic. Its path must contain `projects/PROJECT/topics/TOPIC`
   * so functions-framework turns the push body into a CloudEvent (see {@link localPushEndpoint}).
   */
  pushEndpoint(functionName: string, topic: string): string;
  /** Relay ids; each gets a pull subscription filtered to the commands addressed to it. */
  relays: readonly string[];
}

/** What `applyTopology` did, as `topic/NAME` and `subscription/NAME` entries. */
export interface AppliedTopology {
  created: string[];
  updated: string[];
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
 * Creates every topic and subscription that is missing; an existing subscription gets its push
 * config reset (function ports change between local runs). Safe to run again.
 *
 * @param pubsub - a client for the target project (the emulator, locally)
 * @param topology - from {@link loadTopology}
 * @param opts - push URLs and relay ids
 * @returns the resources created and updated
 * @throws ValidationError for a bad relay id or a push URL without `projects/…/topics/TOPIC`
 */
export async function applyTopology(
  pubsub: PubSub,
  topology: Topology,
  opts: ApplyTopologyOptions,
): Promise<AppliedTopology> {
  const subscriptions = desiredSubscriptions(topology, opts);
  const result: AppliedTopology = { created: [], updated: [] };
  await Promise.all(
    topology.topics.map(async (name) => {
      if (await ignoreExisting(pubsub.createTopic(name))) result.created.push(`topic/${name}`);
    }),
  );
  await Promise.all(
    subscriptions.map(async (s) => {
      const options: CreateSubscriptionOptions = {
        ackDeadlineSeconds: s.ackDeadlineSeconds,
        ...(s.pushEndpoint ? { pushConfig: { pushEndpoint: s.pushEndpoint } } : {}),
        ...(s.filter ? { filter: s.filter } : {}),
        ...(s.retryPolicy && {
          retryPolicy: {
            minimumBackoff: { seconds: s.retryPolicy.minimumBackoffSeconds },
            maximumBackoff: { seconds: s.retryPolicy.maximumBackoffSeconds },
          },
        }),
        ...(s.deadLetter && {
          deadLetterPolicy: {
            deadLetterTopic: pubsub.topic(s.deadLetter.topic).name,
            maxDeliveryAttempts: s.deadLetter.maxDeliveryAttempts,
          },
        }),
      };
      if (await ignoreExisting(pubsub.createSubscription(s.topic, s.name, options))) {
        result.created.push(`subscription/${s.name}`);
        return;
      }
      // An empty push config turns the subscription (back) into a pull subscription.
      await pubsub.subscription(s.name).modifyPushConfig(s.pushEndpoint ? { pushEndpoint: s.pushEndpoint } : {});
      result.updated.push(`subscription/${s.name}`);
    }),
  );
  result.created.sort();
  result.updated.sort();
  return result;
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

type DesiredSubscription = Omit<TopologySubscription, 'push'> & { pushEndpoint?: string };

function desiredSubscriptions(topology: Topology, opts: ApplyTopologyOptions): DesiredSubscription[] {
  const declared = topology.subscriptions.map(({ push, ...rest }, i): DesiredSubscription => {
    if (push === undefined) return rest;
    const pushEndpoint = opts.pushEndpoint(push, rest.topic);
    if (!endpointNamesTopic(pushEndpoint, rest.topic)) {
      throw new ValidationError(
        `topology.subscriptions.${i}.push`,
        `push URL ${pushEndpoint} for ${push} must have projects/PROJECT/topics/${rest.topic} in its path`,
      );
    }
    return { ...rest, pushEndpoint };
  });
  const { namePrefix, filterAttribute, ...relay } = topology.relaySubscription;
  const perRelay = opts.relays.map((id, i): DesiredSubscription => {
    const checked = dnsLabel.safeParse(id);
    if (!checked.success) throw toValidationError(checked.error, `relays.${i}`);
    return {
      ...relay,
      name: `${namePrefix}${id}`,
      filter: `attributes.${filterAttribute} = "${id}"`,
    };
  });
  return [...declared, ...perRelay];
}

/** The same test functions-framework applies before it converts a push body into a CloudEvent. */
function endpointNamesTopic(endpoint: string, topic: string): boolean {
  const path = URL.canParse(endpoint) ? new URL(endpoint).pathname : '';
  return /\/projects\/[^/?]+\/topics\/([^/?]+)/.exec(path)?.[1] === topic;
}

/** @returns true when `create` made the resource, false when it existed already. */
async function ignoreExisting(create: Promise<unknown>): Promise<boolean> {
  try {
    await create;
    return true;
  } catch (err) {
    const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
    if (code === ALREADY_EXISTS) return false;
    throw err;
  }
}
