/**
 * The `kubernetes` provider when a node is lost, with the fake's control plane doing what a real
 * one does (test/fakes/kube/node-lifecycle.ts): the Pod goes Ready=False and stays Running, the
 * NoExecute `unreachable` taint evicts it after its tolerationSeconds, the lost kubelet never
 * confirms the deletion, and a zone-wide outage evicts nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { createKubernetesProvider } from '../../shared/providers/kubernetes/index.js';
import { startFakeKube, type FakeKube } from '../fakes/kube/index.js';
import { eventually } from '../support/eventually.js';
import { instanceSpec } from '../support/instance-spec.js';

const logger = createLogger({ write: () => undefined });
let fake: FakeKube;

const provider = () =>
  createKubernetesProvider({
    provider: {
      name: 'k8s',
      type: 'kubernetes',
      catalogue: {},
      options: {
        ...fake.access(),
        namespace: 'default',
        notReadySeconds: 2,
        terminationGracePeriodSeconds: 1,
        forceDeleteAfterSeconds: 1,
        placement: { tolerations: ['*'], nodeSelectors: { 'kubernetes.io/hostname': ['n-1', 'n-2', 'n-3'] } },
      },
      rolloutBudget: 2,
    },
    path: 'config.providers.0',
    config: { installationId: 'it' },
    logger,
  });

beforeAll(async () => {
  fake = await startFakeKube({ nodes: [{ name: 'n-1' }, { name: 'n-2' }, { name: 'n-3' }] });
});
afterAll(() => fake?.close());

/** Creates a proxy on `node` (by its hostname label) and waits until it runs. */
async function runningOn(node: string, placement: Record<string, unknown> = {}) {
  const p = provider();
  const s = instanceSpec('ln', { nodeSelector: { 'kubernetes.io/hostname': node }, ...placement });
  await p.create(s);
  await eventually(async () => expect((await p.get(s.name)).state).toBe('Running'), 15_000);
  return { p, s };
}

describe('kubernetes provider: a lost node', () => {
  it('a Pod tolerating every taint ("*") is still evicted after notReadySeconds, and force-deleted', async () => {
    const { p, s } = await runningOn('n-1', { tolerations: ['*'] });
    expect(fake.pod('default', s.name)?.spec.tolerations).toContainEqual(
      expect.objectContaining({ key: 'node.kubernetes.io/unreachable', effect: 'NoExecute', tolerationSeconds: 2 }),
    );
    fake.loseNode('n-1');
    expect((await p.get(s.name)).state).toBe('Pending');
    // Evicted by the taint: deletionTimestamp set, and never confirmed by the lost kubelet.
    await eventually(async () => expect((await p.get(s.name)).state).toBe('Terminated'), 10_000);
    await eventually(async () => {
      await p.delete(s.name);
      expect(fake.pod('default', s.name)).toBeUndefined();
    }, 10_000);
  });

  it('a node that reports NotReady: the not-ready taint evicts the Pod after notReadySeconds', async () => {
    const { p, s } = await runningOn('n-3');
    expect(fake.pod('default', s.name)?.spec.tolerations).toContainEqual(
      expect.objectContaining({ key: 'node.kubernetes.io/not-ready', effect: 'NoExecute', tolerationSeconds: 2 }),
    );
    fake.loseNode('n-3', { notReady: true });
    expect((await p.get(s.name)).state).toBe('Pending');
    // Evicted after the 2 s the Pod tolerates not-ready, not the 300 s DefaultTolerationSeconds gives.
    await eventually(async () => expect((await p.get(s.name)).state).toBe('Terminated'), 10_000);
  });

  it('with no eviction (a zone-wide outage), a Pod Running but not Ready for notReadySeconds is Stopped', async () => {
    const { p, s } = await runningOn('n-2');
    fake.loseNode('n-2', { evict: false });
    expect((await p.get(s.name)).state).toBe('Pending');
    await eventually(async () => expect((await p.get(s.name)).state).toBe('Stopped'), 10_000);
    expect(fake.pod('default', s.name)?.metadata.deletionTimestamp).toBeUndefined();
  });
});
