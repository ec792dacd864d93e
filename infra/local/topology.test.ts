/** Unit tests for the topology schema against the real infra/topology.yaml. */
import { existsSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/load.js';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import { ValidationError } from '../../shared/errors.js';
import {
  findTopologyFile,
  loadTopology,
  localPushEndpoint,
  parseTopology,
  pushedFunctions,
  scheduleIntervals,
  type Topology,
} from './topology.js';

/** Push targets whose functions/ folders are still being written. */
const PLANNED_FUNCTIONS = ['requests', 'check', 'gc', 'relay-report'];

const topologyPath = findTopologyFile();
const repoRoot = dirname(dirname(topologyPath));
const topology = loadTopology();

describe('infra/topology.yaml', () => {
  it('is found from this directory', () => {
    expect(topologyPath).toBe(join(repoRoot, 'infra', 'topology.yaml'));
  });

  it('pushes only to functions that exist or are planned', () => {
    const targets = pushedFunctions(topology);
    expect(targets.length).toBeGreaterThan(0);
    for (const name of targets) {
      const exists = existsSync(join(repoRoot, 'functions', name, 'index.ts'));
      expect(exists || PLANNED_FUNCTIONS.includes(name), `push target ${name}`).toBe(true);
    }
  });

  it('resolves every schedule against the local config', () => {
    const config = parseConfig(structuredClone(LOCAL_DEFAULT_CONFIG));
    expect(scheduleIntervals(topology, config)).toEqual([
      {
        name: 'check-sweep',
        topic: 'proxy-checks',
        intervalSeconds: config.checkIntervalSeconds,
        data: { sweep: true },
      },
      { name: 'provider-health', topic: 'health-ticks', intervalSeconds: config.healthIntervalSeconds, data: {} },
      { name: 'gc', topic: 'gc-ticks', intervalSeconds: config.gcIntervalSeconds, data: {} },
    ]);
  });

  it('resolves YAML anchors into each subscription', () => {
    const requests = topology.subscriptions.find((s) => s.name === 'request-deliveries');
    expect(requests?.retryPolicy).toEqual({ minimumBackoffSeconds: 10, maximumBackoffSeconds: 600 });
    expect(requests?.deadLetter).toEqual({ topic: 'dead-letters', maxDeliveryAttempts: 10 });
  });
});

describe('parseTopology', () => {
  const broken: { name: string; edit: (t: Topology) => void; field: string }[] = [
    {
      name: 'a subscription on an undeclared topic',
      edit: (t) => void (t.subscriptions[0] && (t.subscriptions[0].topic = 'nope')),
      field: 'topology.subscriptions.0.topic',
    },
    {
      name: 'a dead-letter topic that is not declared',
      edit: (t) => void (t.relaySubscription.deadLetter = { topic: 'nope', maxDeliveryAttempts: 5 }),
      field: 'topology.relaySubscription.deadLetter.topic',
    },
    {
      name: 'a push target without a functions entry',
      edit: (t) => void (t.subscriptions[0] && (t.subscriptions[0].push = 'unknown-fn')),
      field: 'topology.subscriptions.0.push',
    },
    {
      name: 'a subscription name used twice',
      edit: (t) => void (t.subscriptions[1] && (t.subscriptions[1].name = 'request-deliveries')),
      field: 'topology.subscriptions.1.name',
    },
    {
      name: 'an ack deadline over 600 s',
      edit: (t) => void (t.relaySubscription.ackDeadlineSeconds = 601),
      field: 'topology.relaySubscription.ackDeadlineSeconds',
    },
    {
      name: 'an unknown key (a typo)',
      edit: (t) => Object.assign(t, { subscription: [] }),
      field: 'topology',
    },
  ];
  it.each(broken)('rejects $name, naming $field', ({ edit, field }) => {
    const copy = structuredClone(topology);
    edit(copy);
    const error = captureError(() => parseTopology(copy));
    expect(error).toBeInstanceOf(ValidationError);
    expect(error).toMatchObject({ field });
  });
});

describe('scheduleIntervals', () => {
  it('rejects an intervalFrom that is not a number in the config', () => {
    const copy = structuredClone(topology);
    const first = copy.schedules[0];
    if (first) first.intervalFrom = 'echoUrl';
    const config = parseConfig(structuredClone(LOCAL_DEFAULT_CONFIG));
    expect(captureError(() => scheduleIntervals(copy, config))).toMatchObject({
      field: 'topology.schedules.0.intervalFrom',
    });
  });
});

describe('findTopologyFile', () => {
  it('walks up from a nested directory such as dist/local', () => {
    const root = mkdtempSync(join(tmpdir(), 'topology-'));
    mkdirSync(join(root, 'infra'));
    writeFileSync(join(root, 'infra', 'topology.yaml'), 'topics: []\n');
    const nested = join(root, 'dist', 'local');
    mkdirSync(nested, { recursive: true });
    expect(findTopologyFile(nested)).toBe(join(root, 'infra', 'topology.yaml'));
  });

  it('fails when no parent has one', () => {
    expect(() => findTopologyFile(tmpdir())).toThrow(/infra\/topology\.yaml/);
  });
});

describe('localPushEndpoint', () => {
  it('puts projects/PROJECT/topics/TOPIC in the path', () => {
    expect(localPushEndpoint('http://127.0.0.1:8091/', 'demo-egress', 'proxy-checks')).toBe(
      'http://127.0.0.1:8091/projects/demo-egress/topics/proxy-checks',
    );
  });
});

function captureError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}
