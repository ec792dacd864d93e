/** applyTopology against the real Pub/Sub emulator: idempotent, push endpoints updated, relay filters set. */
import { PubSub } from '@google-cloud/pubsub';
import { afterAll, describe, expect, it } from 'vitest';
import { applyTopology, type ApplyTopologyOptions } from '../../infra/local/apply-topology.js';
import { loadTopology, localPushEndpoint } from '../../infra/local/topology.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('topology');
const pubsub = new PubSub({ projectId: emu.projectId, apiEndpoint: emu.pubsubHost });
const topology = loadTopology();

/** Every function on its own port, as the local launcher does it. */
function options(basePort: number): ApplyTopologyOptions {
  const functions = Object.keys(topology.functions);
  return {
    pushEndpoint: (fn, topic) =>
      localPushEndpoint(`http://127.0.0.1:${basePort + functions.indexOf(fn)}`, emu.projectId, topic),
    relays: ['local', 'lab-2'],
  };
}

afterAll(async () => {
  await pubsub.close();
});

describe('applyTopology', () => {
  it('creates everything once, then only updates', async () => {
    const first = await applyTopology(pubsub, topology, options(9100));
    const expectedSubscriptions = [
      ...topology.subscriptions.map((s) => s.name),
      'relay-commands-local',
      'relay-commands-lab-2',
    ];
    expect(first.created).toEqual(
      [...topology.topics.map((t) => `topic/${t}`), ...expectedSubscriptions.map((s) => `subscription/${s}`)].sort(),
    );
    expect(first.updated).toEqual([]);

    const second = await applyTopology(pubsub, topology, options(9200));
    expect(second.created).toEqual([]);
    expect(second.updated).toEqual(expectedSubscriptions.map((s) => `subscription/${s}`).sort());

    const [topics] = await pubsub.getTopics();
    expect(topics.map((t) => t.name).sort()).toEqual(
      topology.topics.map((t) => `projects/${emu.projectId}/topics/${t}`).sort(),
    );
  });

  it('points a push subscription at the current function port, with retry and dead-letter policy', async () => {
    await applyTopology(pubsub, topology, options(9300));
    const [meta] = await pubsub.subscription('check-batches').getMetadata();
    const checkPort = 9300 + Object.keys(topology.functions).indexOf('check');
    expect(meta.pushConfig?.pushEndpoint).toBe(
      `http://127.0.0.1:${checkPort}/projects/${emu.projectId}/topics/proxy-checks`,
    );
    expect(meta.topic).toBe(`projects/${emu.projectId}/topics/proxy-checks`);
    expect(meta.ackDeadlineSeconds).toBe(300);
    expect(Number(meta.retryPolicy?.minimumBackoff?.seconds)).toBe(10);
    expect(Number(meta.retryPolicy?.maximumBackoff?.seconds)).toBe(600);
    expect(meta.deadLetterPolicy).toMatchObject({
      deadLetterTopic: `projects/${emu.projectId}/topics/dead-letters`,
      maxDeliveryAttempts: 10,
    });
  });

  it('gives each relay a pull subscription filtered to its id', async () => {
    const [meta] = await pubsub.subscription('relay-commands-lab-2').getMetadata();
    expect(meta.topic).toBe(`projects/${emu.projectId}/topics/relay-commands`);
    expect(meta.filter).toBe('attributes.relay = "lab-2"');
    expect(meta.pushConfig?.pushEndpoint ?? '').toBe('');
    expect(meta.ackDeadlineSeconds).toBe(20);
  });

  it('keeps a pull subscription pull', async () => {
    const [meta] = await pubsub.subscription('dead-letters-audit').getMetadata();
    expect(meta.pushConfig?.pushEndpoint ?? '').toBe('');
  });

  it('refuses a push URL that functions-framework could not turn into a CloudEvent', async () => {
    await expect(
      applyTopology(pubsub, topology, { pushEndpoint: () => 'http://127.0.0.1:9999/', relays: [] }),
    ).rejects.toMatchObject({ code: 'Validation', field: 'topology.subscriptions.0.push' });
  });

  it('refuses a relay id that would break the filter', async () => {
    await expect(applyTopology(pubsub, topology, { ...options(9100), relays: ['x" OR "1'] })).rejects.toMatchObject({
      code: 'Validation',
      field: 'relays.0',
    });
  });
});
