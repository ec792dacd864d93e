/** Applying infra/topology.yaml to Pub/Sub: every topic and subscription, idempotently. */
import type { CreateSubscriptionOptions, PubSub } from '@google-cloud/pubsub';
import { dnsLabel } from '../../shared/domain/names.js';
import { toValidationError } from '../../shared/domain/proxy.js';
import { ValidationError } from '../../shared/errors.js';
import type { Topology, TopologySubscription } from './topology.js';

/** gRPC status ALREADY_EXISTS, as the Pub/Sub client reports it in `err.code`. */
const ALREADY_EXISTS = 6;

/** How `applyTopology` reaches the functions and which relays exist. */
export interface ApplyTopologyOptions {
  /**
   * The push URL of a function for a topic. Its path must contain `projects/PROJECT/topics/TOPIC`
   * so functions-framework turns the push body into a CloudEvent (see {@link localPushEndpoint}).
   */
  pushEndpoint(functionName: string, topic: string): string;
  /** Relay ids; each gets a pull subscription filtered to the commands addressed to it. */
  relays: readonly string[];
  /**
   * Applies push subscriptions without their retry policy (default: as declared). For the Pub/Sub
   * emulator: under a retry policy it stops pushing nacked messages once several are backing off
   * (a dozen refused at once: four pushed again after 14 s, then none in the next 75 s; one alone
   * is retried on schedule), so a request refused while a function restarts was never delivered.
   * Without one it pushes a nacked message again about every second, and dead-letters it after
   * `maxDeliveryAttempts` as declared. Checked with the emulator of Cloud SDK 528.0.0; see
   * `test/integration/push-redelivery.test.ts`.
   */
  omitPushRetryPolicy?: boolean;
}

/** What `applyTopology` did, as `topic/NAME` and `subscription/NAME` entries. */
export interface AppliedTopology {
  created: string[];
  updated: string[];
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
        ...(s.retryPolicy &&
          !(s.pushEndpoint && opts.omitPushRetryPolicy) && {
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
