/** From Pods to Instances: the phase table, IPs with and without host networking, and ownership. */
import { describe, expect, it } from 'vitest';
import { ownerOf, podSchema, podToInstance } from './observe.js';

const IMAGE = 'config.providers.0.options.image';
const labels = {
  'app.kubernetes.io/managed-by': 'egress',
  'egress.dev/installation': 'it',
  'egress.dev/provider': 'k8s',
  'egress.dev/proxy': 'p1',
  'egress.dev/spec-hash': 'h1',
};
type Over = { status?: Record<string, unknown>; spec?: Record<string, unknown>; deleting?: boolean };
const pod = (o: Over = {}) =>
  podSchema.parse({
    metadata: {
      name: 'ep-p1-12345678',
      labels,
      creationTimestamp: new Date('2026-01-02T03:04:05Z'),
      ...(o.deleting ? { deletionTimestamp: '2026-01-02T03:05:05Z' } : {}),
    },
    spec: { containers: [{ name: 'proxy', ports: [{ name: 'proxy', containerPort: 8888 }] }], ...o.spec },
    status: { podIP: '10.1.2.3', hostIP: '192.0.2.7', ...o.status },
  });
const ready = (status: 'True' | 'False') => [
  { type: 'PodScheduled', status: 'True' },
  { type: 'Ready', status },
];
const waiting = (reason: string) => [{ name: 'proxy', state: { waiting: { reason, message: 'm' } } }];

describe('podToInstance', () => {
  it.each([
    ['Pending, not scheduled yet', { status: { phase: 'Pending' } }, 'Pending', undefined],
    ['Running and Ready', { status: { phase: 'Running', conditions: ready('True') } }, 'Running', undefined],
    ['Running, not ready', { status: { phase: 'Running', conditions: ready('False') } }, 'Pending', undefined],
    ['Succeeded', { status: { phase: 'Succeeded' } }, 'Terminated', undefined],
    ['Failed (evicted)', { status: { phase: 'Failed', reason: 'Evicted' } }, 'Terminated', undefined],
    ['node lost', { status: { phase: 'Unknown' } }, 'Stopped', undefined],
    [
      'terminating while Running+Ready',
      { deleting: true, status: { phase: 'Running', conditions: ready('True') } },
      'Terminated',
      undefined,
    ],
    [
      'unschedulable',
      {
        status: {
          phase: 'Pending',
          conditions: [{ type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message: '0/3 nodes' }],
        },
      },
      'Failed',
      'QuotaExceeded',
    ],
    [
      'a first failed pull (ErrImagePull) may still succeed',
      { status: { phase: 'Pending', containerStatuses: waiting('ErrImagePull') } },
      'Pending',
      undefined,
    ],
    [
      'image cannot be pulled',
      { status: { phase: 'Pending', containerStatuses: waiting('ImagePullBackOff') } },
      'Failed',
      'Retryable',
    ],
    [
      'invalid image name',
      { status: { phase: 'Pending', containerStatuses: waiting('InvalidImageName') } },
      'Failed',
      'Permanent',
    ],
    [
      'crash looping',
      { status: { phase: 'Running', conditions: ready('False'), containerStatuses: waiting('CrashLoopBackOff') } },
      'Failed',
      'Retryable',
    ],
    [
      'still creating',
      { status: { phase: 'Pending', containerStatuses: waiting('ContainerCreating') } },
      'Pending',
      undefined,
    ],
  ])('%s → %s', (_what, over: Over, state, code) => {
    const i = podToInstance(pod(over), IMAGE);
    expect(i.state).toBe(state);
    expect(i.error?.code).toBe(code);
  });

  it('carries name, proxy, installation, spec hash and a non-zero createdAt from creationTimestamp', () => {
    expect(podToInstance(pod({ status: { phase: 'Running', conditions: ready('True') } }), IMAGE)).toEqual({
      name: 'ep-p1-12345678',
      proxy: 'p1',
      installationId: 'it',
      specHash: 'h1',
      state: 'Running',
      ip: '10.1.2.3',
      port: 8888,
      createdAt: Date.parse('2026-01-02T03:04:05Z'),
    });
  });

  it('an invalid image name names the image option', () => {
    const i = podToInstance(
      pod({ status: { phase: 'Pending', containerStatuses: waiting('InvalidImageName') } }),
      IMAGE,
    );
    expect(i.error?.field).toBe(IMAGE);
    expect(i.error?.message).toContain(IMAGE);
  });

  it('with hostNetwork or a hostPort the address is the node’s', () => {
    expect(podToInstance(pod({ spec: { hostNetwork: true } }), IMAGE).ip).toBe('192.0.2.7');
    const hostPort = {
      containers: [{ name: 'proxy', ports: [{ name: 'proxy', containerPort: 3128, hostPort: 3128 }] }],
    };
    expect(podToInstance(pod({ spec: hostPort }), IMAGE)).toMatchObject({ ip: '192.0.2.7', port: 3128 });
  });

  it('ownerOf needs every ownership label', () => {
    expect(ownerOf(pod())).toEqual({ installationId: 'it', provider: 'k8s', proxy: 'p1' });
    const foreign = podSchema.parse({
      metadata: { name: 'x', labels: { app: 'x' }, creationTimestamp: '2026-01-01T00:00:00Z' },
    });
    expect(ownerOf(foreign)).toBeUndefined();
  });

  it('refuses a Pod without creationTimestamp rather than reporting createdAt 0', () => {
    expect(podSchema.safeParse({ metadata: { name: 'x' } }).success).toBe(false);
  });
});

describe('podToInstance: Unschedulable', () => {
  const since = '2026-01-02T03:04:05Z';
  const unschedulable = (message: string) =>
    pod({
      status: {
        phase: 'Pending',
        conditions: [
          { type: 'PodScheduled', status: 'False', reason: 'Unschedulable', message, lastTransitionTime: since },
        ],
      },
    });
  const at = (seconds: number) => ({ graceMs: 60_000, now: Date.parse(since) + seconds * 1000 });

  it('is Pending within the grace after lastTransitionTime', () => {
    expect(podToInstance(unschedulable('0/1 nodes are available: 1 Insufficient cpu.'), IMAGE, at(59)).state).toBe(
      'Pending',
    );
  });

  it.each([
    ['0/2 nodes are available: 2 Insufficient memory.', 'QuotaExceeded', undefined],
    [
      "0/1 nodes are available: 1 node(s) didn't have free ports for the requested pod ports.",
      'QuotaExceeded',
      undefined,
    ],
    [
      "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) didn't match Pod's node affinity/selector.",
      'QuotaExceeded',
      undefined,
    ],
    [
      "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector.",
      'Permanent',
      'spec.placement.nodeSelector',
    ],
    [
      '0/1 nodes are available: 1 node(s) had untolerated taint {dedicated: egress}.',
      'Permanent',
      'spec.placement.tolerations',
    ],
  ])('past the grace, %s → %s', (message, code, field) => {
    const i = podToInstance(unschedulable(message), IMAGE, at(61));
    expect(i.state).toBe('Failed');
    expect(i.error).toMatchObject({ code, ...(field ? { field } : {}) });
  });
});

describe('podToInstance: Running but not Ready', () => {
  const since = Date.parse('2026-01-02T03:10:00Z');
  const notReady = pod({
    status: {
      phase: 'Running',
      conditions: [
        { type: 'PodScheduled', status: 'True' },
        { type: 'Ready', status: 'False', lastTransitionTime: '2026-01-02T03:10:00Z' },
      ],
    },
  });

  it('is Pending within notReadyMs of the Ready condition turning False, then Stopped (replaced)', () => {
    const clock = (after: number) => ({ graceMs: 0, notReadyMs: 120_000, now: since + after });
    expect(podToInstance(notReady, IMAGE, clock(119_000)).state).toBe('Pending');
    expect(podToInstance(notReady, IMAGE, clock(120_000)).state).toBe('Stopped');
  });
});
