/** Reads the rendered Terraform (topology.auto.tf.json) as the resources it would create for given inputs. */
import { z } from 'zod';
import type { Config } from '../../shared/config/schema.js';

/** One subscription as both deployers describe it. */
export interface ViewSubscription {
  name: string;
  topic: string;
  ackDeadlineSeconds: number;
  /** The function it pushes to and the URL path (which names the topic). */
  push: { function: string; path: string } | null;
  filter: string | null;
  /** Minimum and maximum backoff, seconds. */
  retry: [number, number] | null;
  deadLetter: { topic: string; maxDeliveryAttempts: number } | null;
}

/** Topics, subscriptions and schedules, sorted by name. */
export interface TopologyView {
  topics: string[];
  subscriptions: ViewSubscription[];
  schedules: { name: string; topic: string; intervalSeconds: number; data: unknown }[];
}

const subscriptionSchema = z.object({
  for_each: z.string().optional(),
  name: z.string(),
  topic: z.string(),
  ack_deadline_seconds: z.number(),
  filter: z.string().optional(),
  push_config: z.object({ push_endpoint: z.string() }).optional(),
  retry_policy: z.object({ minimum_backoff: z.string(), maximum_backoff: z.string() }).optional(),
  dead_letter_policy: z.object({ dead_letter_topic: z.string(), max_delivery_attempts: z.number() }).optional(),
});

const renderedSchema = z.object({
  locals: z.object({
    topology_schedules: z.record(z.string(), z.object({ interval_from: z.string(), default_seconds: z.number() })),
    cron_by_seconds: z.record(z.string(), z.string()),
  }),
  resource: z.object({
    google_pubsub_topic: z.record(z.string(), z.object({ name: z.string() })),
    google_pubsub_subscription: z.record(z.string(), subscriptionSchema),
    google_cloud_scheduler_job: z.record(
      z.string(),
      z.object({ name: z.string(), pubsub_target: z.object({ topic_name: z.string(), data: z.string() }) }),
    ),
  }),
});

/** `"10s"` → 10. */
function seconds(duration: string): number {
  const match = /^(\d+)s$/.exec(duration);
  if (!match) throw new Error(`not a duration in seconds: ${duration}`);
  return Number(match[1]);
}

/**
 * The topology Terraform would create from the rendered file.
 *
 * @param rendered - the parsed topology.auto.tf.json
 * @param inputs - `var.project`, the decoded config_file, and the relays `local.relays` yields
 * @throws Error on a reference this reader cannot resolve (a topic that is not rendered)
 */
export function terraformTopologyView(
  rendered: unknown,
  inputs: { project: string; config: Config; relays: string[] },
): TopologyView {
  const doc = renderedSchema.parse(rendered);
  const topics = doc.resource.google_pubsub_topic;
  const topicOf = (ref: string) => {
    const key = /^\$\{google_pubsub_topic\.([A-Za-z0-9_]+)\.(id|name)\}$/.exec(ref)?.[1];
    const topic = key === undefined ? undefined : topics[key];
    if (!topic) throw new Error(`unresolved topic reference ${ref}`);
    return topic.name;
  };
  const subscriptions: ViewSubscription[] = [];
  for (const s of Object.values(doc.resource.google_pubsub_subscription)) {
    const keys = s.for_each === undefined ? [undefined] : s.for_each === '${local.relays}' ? inputs.relays : [];
    if (s.for_each !== undefined && s.for_each !== '${local.relays}') throw new Error(`unknown for_each ${s.for_each}`);
    for (const key of keys) {
      const fill = (text: string) => (key === undefined ? text : text.replaceAll('${each.key}', key));
      const endpoint = s.push_config?.push_endpoint;
      subscriptions.push({
        name: fill(s.name),
        topic: topicOf(s.topic),
        ackDeadlineSeconds: s.ack_deadline_seconds,
        push: endpoint
          ? {
              function: /google_cloudfunctions2_function\.fn\["([^"]+)"\]/.exec(endpoint)?.[1] ?? '?',
              path: endpoint.replace(/^\$\{[^}]+\}/, '').replaceAll('${var.project}', inputs.project),
            }
          : null,
        filter: s.filter === undefined ? null : fill(s.filter),
        retry: s.retry_policy
          ? [seconds(s.retry_policy.minimum_backoff), seconds(s.retry_policy.maximum_backoff)]
          : null,
        deadLetter: s.dead_letter_policy
          ? {
              topic: topicOf(s.dead_letter_policy.dead_letter_topic),
              maxDeliveryAttempts: s.dead_letter_policy.max_delivery_attempts,
            }
          : null,
      });
    }
  }
  // main.tf: schedule_seconds = try(local.config[s.interval_from], s.default_seconds).
  const configValues = new Map<string, unknown>(Object.entries(inputs.config));
  const schedules = Object.values(doc.resource.google_cloud_scheduler_job).map((job) => {
    const declared = doc.locals.topology_schedules[job.name];
    if (!declared) throw new Error(`job ${job.name} has no topology_schedules entry`);
    const value = configValues.get(declared.interval_from);
    const intervalSeconds = typeof value === 'number' ? value : declared.default_seconds;
    if (!(String(intervalSeconds) in doc.locals.cron_by_seconds)) {
      throw new Error(`job ${job.name}: ${intervalSeconds} s has no cron expression`);
    }
    return {
      name: job.name,
      topic: topicOf(job.pubsub_target.topic_name),
      intervalSeconds,
      data: JSON.parse(Buffer.from(job.pubsub_target.data, 'base64').toString('utf8')) as unknown,
    };
  });
  return {
    topics: Object.values(topics)
      .map((t) => t.name)
      .sort(),
    subscriptions: subscriptions.sort((a, b) => a.name.localeCompare(b.name)),
    schedules: schedules.sort((a, b) => a.name.localeCompare(b.name)),
  };
}
