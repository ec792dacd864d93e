/**
 * The topology as Terraform deploys it (topology.auto.tf.json with the inputs of
 * terraform.tfvars.example) against the topology as the local launcher applies it to the real
 * Pub/Sub emulator: the same topics, subscriptions, push targets, filters, policies and schedules.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { applyTopology } from '../../infra/local/apply-topology.js';
import { loadTopology, localPushEndpoint, scheduleIntervals, type Topology } from '../../infra/local/topology.js';
import { RENDERED_FILE } from '../../infra/terraform/render.js';
import { parseConfig } from '../../shared/config/load.js';
import { RELAY_TYPES, type Config } from '../../shared/config/schema.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { terraformTopologyView, type TopologyView, type ViewSubscription } from '../support/terraform-view.js';

const emu = emulatorEnv('tfview');
const pubsub = new PubSub({ projectId: emu.projectId, apiEndpoint: emu.pubsubHost });
const topology = loadTopology();
const renderedText = readFileSync(RENDERED_FILE, 'utf8');
const rendered: unknown = JSON.parse(renderedText);
// The Terraform inputs: config_file of infra/terraform/terraform.tfvars.example.
const config = parseConfig(parseYaml(readFileSync(join('docs', 'samples', 'config', 'production.yaml'), 'utf8')));
/** Relays named by relay-backed providers: the rule of infra/local/stack.ts and of main.tf's local.relays. */
const relays = (c: Config) => [
  ...new Set(c.providers.flatMap((p) => (RELAY_TYPES.includes(p.type) && p.relay ? [p.relay] : []))),
];

/** What the launcher made in the emulator, read back; push URLs mapped to the function on that port. */
async function launcherView(t: Topology): Promise<TopologyView> {
  const functions = Object.keys(t.functions);
  const base = 9400;
  await applyTopology(pubsub, t, {
    pushEndpoint: (fn, topic) =>
      localPushEndpoint(`http://127.0.0.1:${base + functions.indexOf(fn)}`, emu.projectId, topic),
    relays: relays(config),
    omitPushRetryPolicy: true,
  });
  const short = (path: string | null | undefined) => (path ?? '').split('/').pop() ?? '';
  const [topics] = await pubsub.getTopics();
  const [subs] = await pubsub.getSubscriptions();
  const subscriptions = await Promise.all(
    subs.map(async (s): Promise<ViewSubscription> => {
      const [m] = await s.getMetadata();
      const endpoint = m.pushConfig?.pushEndpoint ? new URL(m.pushConfig.pushEndpoint) : undefined;
      return {
        name: short(m.name),
        topic: short(m.topic),
        ackDeadlineSeconds: m.ackDeadlineSeconds ?? 0,
        push: endpoint ? { function: functions[Number(endpoint.port) - base] ?? '?', path: endpoint.pathname } : null,
        filter: m.filter || null,
        retry: m.retryPolicy
          ? [Number(m.retryPolicy.minimumBackoff?.seconds), Number(m.retryPolicy.maximumBackoff?.seconds)]
          : null,
        deadLetter: m.deadLetterPolicy
          ? {
              topic: short(m.deadLetterPolicy.deadLetterTopic),
              maxDeliveryAttempts: m.deadLetterPolicy.maxDeliveryAttempts ?? 0,
            }
          : null,
      };
    }),
  );
  return {
    topics: topics.map((x) => short(x.name)).sort(),
    subscriptions: subscriptions.sort((a, b) => a.name.localeCompare(b.name)),
    schedules: scheduleIntervals(t, config)
      .map((s) => ({ name: s.name, topic: s.topic, intervalSeconds: s.intervalSeconds, data: s.data }))
      .sort((a, b) => a.name.localeCompare(b.name)),
  };
}

let launcher: TopologyView;

/**
 * `view` with no retry policy on push subscriptions: the one thing the launcher applies otherwise,
 * for the emulator's sake (`omitPushRetryPolicy` in infra/local/apply-topology.ts).
 */
function withoutPushRetry(view: TopologyView): TopologyView {
  return { ...view, subscriptions: view.subscriptions.map((s) => (s.push ? { ...s, retry: null } : s)) };
}

beforeAll(async () => {
  launcher = await launcherView(topology);
});

afterAll(async () => {
  await pubsub.close();
});

describe('Terraform and the local launcher deploy the same topology', () => {
  it('topics, subscriptions (push target, filter, retry, dead letter) and schedules are equal, but push retry', () => {
    const terraform = terraformTopologyView(rendered, { project: emu.projectId, config, relays: relays(config) });
    expect(relays(config)).toEqual(['lab-1']);
    expect(launcher.subscriptions.some((s) => s.name === 'relay-commands-lab-1')).toBe(true);
    expect(terraform.subscriptions).toHaveLength(topology.subscriptions.length + 1);
    expect(terraform.schedules.map((s) => s.name)).toEqual(['check-sweep', 'gc', 'provider-health']);
    expect(terraform.subscriptions.filter((s) => s.push).every((s) => s.retry !== null)).toBe(true);
    expect(withoutPushRetry(terraform)).toEqual(launcher);
  });

  it('a difference in the rendered file is seen (the comparison can fail)', () => {
    const edited: unknown = JSON.parse(
      renderedText.replace('"ack_deadline_seconds": 60', '"ack_deadline_seconds": 61'),
    );
    expect(
      withoutPushRetry(terraformTopologyView(edited, { project: emu.projectId, config, relays: relays(config) })),
    ).not.toEqual(launcher);
  });
});
