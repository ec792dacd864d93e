/**
 * Renders infra/topology.yaml into Terraform JSON syntax (infra/terraform/topology.auto.tf.json):
 * every topic, subscription, dead-letter permission and scheduler job, plus the function table the
 * hand-written functions.tf iterates over. `npm run terraform:render` writes it.
 */
import { configSchema, RELAY_TYPES } from '../../shared/config/schema.js';
import { parseGcpOptions } from '../../shared/providers/gcp/options.js';
import { ECHO_PORT } from '../echo/user-data.js';
import { parseKubernetesOptions } from '../../shared/providers/kubernetes/options.js';
import type { Topology, TopologySubscription } from '../local/topology.js';

/** The file the renderer writes, relative to the repository root. */
export const RENDERED_FILE = 'infra/terraform/topology.auto.tf.json';

/** Scheduler intervals a cron expression can express exactly: minutes dividing an hour, hours dividing a day. */
export const CRON_BY_SECONDS: Readonly<Record<string, string>> = Object.fromEntries(
  new Map<string, string>([
    ...[1, 2, 3, 4, 5, 6, 10, 12, 15, 20, 30].map((m): [string, string] => [
      String(m * 60),
      m === 1 ? '* * * * *' : `*/${m} * * * *`,
    ]),
    ...[1, 2, 3, 4, 6, 8, 12].map((h): [string, string] => [
      String(h * 3600),
      h === 1 ? '0 * * * *' : `0 */${h} * * *`,
    ]),
    ['86400', '0 0 * * *'],
  ]),
);

type Json = string | number | boolean | null | Json[] | { [key: string]: Json };
type Block = Record<string, Json>;

/** A Terraform resource address part: topic and subscription names with `_` for `-` and `.`. */
export function tfName(name: string): string {
  return name.replace(/[^A-Za-z0-9_]/g, '_');
}

/** Seconds as a Terraform duration string (`"600s"`). */
const duration = (seconds: number) => `${seconds}s`;

/** The default of a numeric config key (the schema's default), so a config may leave it out. */
function configDefault(key: string): number {
  const shape: Record<string, { parse(v: unknown): unknown } | undefined> = configSchema.shape;
  const value = shape[key]?.parse(undefined);
  if (typeof value !== 'number') throw new Error(`config key "${key}" has no numeric default`);
  return value;
}

function retryAndDeadLetter(s: Pick<TopologySubscription, 'retryPolicy' | 'deadLetter'>): Block {
  const block: Block = {};
  if (s.retryPolicy) {
    block['retry_policy'] = {
      minimum_backoff: duration(s.retryPolicy.minimumBackoffSeconds),
      maximum_backoff: duration(s.retryPolicy.maximumBackoffSeconds),
    };
  }
  if (s.deadLetter) {
    block['dead_letter_policy'] = {
      dead_letter_topic: `\${google_pubsub_topic.${tfName(s.deadLetter.topic)}.id}`,
      max_delivery_attempts: s.deadLetter.maxDeliveryAttempts,
    };
    // The service agent must be allowed to publish to the dead-letter topic before the policy works.
    block['depends_on'] = [`google_pubsub_topic_iam_member.dead_letter_publisher_${tfName(s.deadLetter.topic)}`];
  }
  return block;
}

function pushSubscription(s: TopologySubscription): Block {
  const block: Block = {
    name: s.name,
    project: '${var.project}',
    topic: `\${google_pubsub_topic.${tfName(s.topic)}.id}`,
    ack_deadline_seconds: s.ackDeadlineSeconds,
    labels: '${local.labels}',
    // Subscriptions never expire for lack of activity (the default is 31 days).
    expiration_policy: { ttl: '' },
  };
  if (s.filter) block['filter'] = s.filter;
  if (s.push !== undefined) {
    // The path makes functions-framework turn the push body into a CloudEvent (as localPushEndpoint does).
    const service = `google_cloudfunctions2_function.fn["${s.push}"].service_config[0].uri`;
    block['push_config'] = {
      push_endpoint: `\${${service}}/projects/\${var.project}/topics/${s.topic}`,
      oidc_token: { service_account_email: '${google_service_account.pubsub_push.email}', audience: `\${${service}}` },
    };
  }
  return { ...block, ...retryAndDeadLetter(s) };
}

/**
 * The Pub/Sub service agent, which Google creates when the Pub/Sub API is enabled: its grants name a
 * topic or subscription, which depend on the API, so they are never applied before it exists.
 */
const PUBSUB_AGENT = 'serviceAccount:${local.pubsub_service_agent}';

/**
 * The Terraform JSON document for a topology.
 *
 * @param topology - from `loadTopology`
 * @returns an object to serialise as topology.auto.tf.json
 */
export function renderTopology(topology: Topology): Record<string, Json> {
  const topics: Record<string, Block> = {};
  for (const name of topology.topics) {
    // Subscriptions, grants and jobs reference a topic, so they are ordered after the API too.
    topics[tfName(name)] = {
      name,
      project: '${var.project}',
      labels: '${local.labels}',
      depends_on: ['google_project_service.apis'],
    };
  }
  const { subscriptions, deadLetterSubscribers } = renderSubscriptions(topology);
  const { jobs, schedules } = renderSchedules(topology);
  const gcpDefaults = parseGcpOptions({ project: 'defaults', zone: 'us-central1-a' }, 'defaults');
  // Only the defaults are read here (the port), so the default (tag) image is allowed for the parse.
  const kubernetesDefaults = parseKubernetesOptions(
    { server: 'https://defaults', token: 'defaults', allowUnpinnedImage: true },
    'defaults',
  );
  return {
    '//': 'GENERATED from infra/topology.yaml by `npm run terraform:render` (infra/terraform/render.ts). Do not edit.',
    locals: {
      topic_names: Object.fromEntries(topology.topics.map((t) => [t, `\${google_pubsub_topic.${tfName(t)}.name}`])),
      topology_functions: renderFunctions(topology),
      topology_schedules: schedules,
      cron_by_seconds: { ...CRON_BY_SECONDS },
      relay_types: [...RELAY_TYPES],
      gcp_option_defaults: { network: gcpDefaults.network, tags: gcpDefaults.tags, proxy_port: gcpDefaults.proxyPort },
      echo_port: ECHO_PORT,
      kubernetes_option_defaults: { port: kubernetesDefaults.port },
    },
    resource: {
      google_pubsub_topic: topics,
      google_pubsub_subscription: subscriptions,
      google_pubsub_topic_iam_member: deadLetterPublishers(topology),
      google_pubsub_subscription_iam_member: deadLetterSubscribers,
      google_cloud_scheduler_job: jobs,
    },
  };
}

/** Every declared subscription, the relays' (one per relay), and the dead-letter subscriber grants. */
function renderSubscriptions(topology: Topology): {
  subscriptions: Record<string, Block>;
  deadLetterSubscribers: Record<string, Block>;
} {
  const subscriptions: Record<string, Block> = {};
  const deadLetterSubscribers: Record<string, Block> = {};
  for (const s of topology.subscriptions) {
    subscriptions[tfName(s.name)] = pushSubscription(s);
    if (s.deadLetter) {
      deadLetterSubscribers[`dead_letter_subscriber_${tfName(s.name)}`] = {
        project: '${var.project}',
        subscription: `\${google_pubsub_subscription.${tfName(s.name)}.name}`,
        role: 'roles/pubsub.subscriber',
        member: PUBSUB_AGENT,
      };
    }
  }
  const relay = topology.relaySubscription;
  subscriptions['relay_commands'] = {
    for_each: '${local.relays}',
    name: `${relay.namePrefix}\${each.key}`,
    project: '${var.project}',
    topic: `\${google_pubsub_topic.${tfName(relay.topic)}.id}`,
    ack_deadline_seconds: relay.ackDeadlineSeconds,
    filter: `attributes.${relay.filterAttribute} = "\${each.key}"`,
    labels: '${local.labels}',
    expiration_policy: { ttl: '' },
    ...retryAndDeadLetter(relay),
  };
  if (relay.deadLetter) {
    deadLetterSubscribers['dead_letter_subscriber_relay_commands'] = {
      for_each: '${local.relays}',
      project: '${var.project}',
      subscription: '${google_pubsub_subscription.relay_commands[each.key].name}',
      role: 'roles/pubsub.subscriber',
      member: PUBSUB_AGENT,
    };
  }
  return { subscriptions, deadLetterSubscribers };
}

/** The Pub/Sub service agent may publish to every dead-letter topic. */
function deadLetterPublishers(topology: Topology): Record<string, Block> {
  const deadLetterTopics = new Set(
    [...topology.subscriptions, topology.relaySubscription].flatMap((s) => (s.deadLetter ? [s.deadLetter.topic] : [])),
  );
  const topicMembers: Record<string, Block> = {};
  for (const topic of [...deadLetterTopics].sort()) {
    topicMembers[`dead_letter_publisher_${tfName(topic)}`] = {
      project: '${var.project}',
      topic: `\${google_pubsub_topic.${tfName(topic)}.name}`,
      role: 'roles/pubsub.publisher',
      member: PUBSUB_AGENT,
    };
  }
  return topicMembers;
}

/** A Cloud Scheduler job per schedule, its interval from the config key it names (a cron it can keep). */
function renderSchedules(topology: Topology): { jobs: Record<string, Block>; schedules: Record<string, Block> } {
  const jobs: Record<string, Block> = {};
  const schedules: Record<string, Block> = {};
  for (const s of topology.schedules) {
    schedules[s.name] = { interval_from: s.intervalFrom, default_seconds: configDefault(s.intervalFrom) };
    const seconds = `local.schedule_seconds["${s.name}"]`;
    jobs[tfName(s.name)] = {
      name: s.name,
      project: '${var.project}',
      region: '${var.region}',
      description: `Publishes ${JSON.stringify(s.data)} to ${s.topic} every ${s.intervalFrom} (infra/topology.yaml)`,
      schedule: `\${local.cron_by_seconds[tostring(${seconds})]}`,
      time_zone: 'Etc/UTC',
      pubsub_target: {
        topic_name: `\${google_pubsub_topic.${tfName(s.topic)}.id}`,
        data: Buffer.from(JSON.stringify(s.data)).toString('base64'),
      },
      lifecycle: {
        precondition: [
          {
            condition: `\${contains(keys(local.cron_by_seconds), tostring(${seconds}))}`,
            error_message: `${s.intervalFrom} must be one of ${Object.keys(CRON_BY_SECONDS).join(', ')} seconds (a cron schedule).`,
          },
        ],
      },
      depends_on: ['google_project_service.apis'],
    };
  }
  return { jobs, schedules };
}

/** Each function's memory, timeout, trigger kind, whether it calls providers, and the topics pushed to it. */
function renderFunctions(topology: Topology): Record<string, Block> {
  const functions: Record<string, Block> = {};
  for (const [name, f] of Object.entries(topology.functions)) {
    functions[name] = {
      memory_mb: f.memoryMb,
      timeout_seconds: f.timeoutSeconds,
      http: f.http,
      calls_providers: f.callsProviders,
      topics: topology.subscriptions.flatMap((s) => (s.push === name ? [s.topic] : [])),
    };
  }
  return functions;
}

/** The file's text: two-space JSON and a final newline (what Prettier leaves alone). */
export function renderTopologyFile(topology: Topology): string {
  return `${JSON.stringify(renderTopology(topology), null, 2)}\n`;
}
