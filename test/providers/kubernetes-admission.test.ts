/**
 * The `kubernetes` provider against the admission a real API server runs before storage: Pod
 * Security levels, LimitRange, a terminating namespace and ResourceQuota (all 403 Forbidden), a
 * duplicate create in a full namespace, and the Secret owned by its Pod.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressError, PermanentError, QuotaExceededError, RetryableError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import type { Provider } from '../../shared/providers/contract.js';
import { createKubernetesProvider } from '../../shared/providers/kubernetes/index.js';
import { secretName } from '../../shared/providers/kubernetes/manifests.js';
import { startFakeKube, type FakeKube } from '../fakes/kube/index.js';
import { eventually } from '../support/eventually.js';
import { instanceSpec } from '../support/instance-spec.js';
import { rejectionOf } from '../support/rejection.js';

const logger = createLogger({ write: () => undefined });
let fake: FakeKube;
let provider: Provider;
const NAMESPACES = ['default', 'baseline', 'restricted', 'limited', 'full', 'going'];

const failure = (p: Promise<unknown>) => rejectionOf(p, EgressError);
const spec = (placement: Record<string, unknown> = {}) => instanceSpec('ka', placement);

beforeAll(async () => {
  fake = await startFakeKube({
    namespaces: NAMESPACES,
    namespaceRules: {
      baseline: { enforce: 'baseline' },
      restricted: { enforce: 'restricted' },
      limited: { maxMemoryPerContainer: '32Mi' },
      going: { terminating: true },
    },
    podQuota: { full: 1 },
  });
  provider = createKubernetesProvider({
    provider: {
      name: 'k8s',
      type: 'kubernetes',
      catalogue: {},
      options: {
        ...fake.access(),
        namespace: 'default',
        namespaces: NAMESPACES.slice(1),
        // hostNetwork is allowed here so that the cluster's own admission is what refuses it.
        placement: { allowHostNetwork: true },
      },
      rolloutBudget: 2,
    },
    path: 'config.providers.0',
    config: { installationId: 'it' },
    logger,
  });
});
afterAll(() => fake?.close());

describe('kubernetes provider: 403 on create, by the admission plugin that refused it', () => {
  it('the Pod passes the restricted Pod Security level; hostNetwork under baseline is Permanent on its placement key', async () => {
    const ok = await provider.create(spec({ namespace: 'restricted' }));
    expect(ok.state).not.toBe('Failed');
    const err = await failure(provider.create(spec({ namespace: 'baseline', hostNetwork: true })));
    expect(err).toBeInstanceOf(PermanentError);
    expect(err.toInfo()).toMatchObject({ field: 'spec.placement.hostNetwork' });
    expect(err.message).toContain('violates PodSecurity "baseline:latest"');
    const port = await failure(provider.create(spec({ namespace: 'restricted', hostPort: true })));
    expect(port.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.hostPort' });
    expect(fake.secrets('baseline')).toEqual([]);
  });

  it('a LimitRange is Permanent on the resources option; a terminating namespace is Retryable; quota is QuotaExceeded', async () => {
    const limited = await failure(provider.create(spec({ namespace: 'limited' })));
    expect(limited.toInfo()).toMatchObject({ code: 'Permanent', field: 'config.providers.0.options.resources' });
    expect(limited.message).toContain('maximum memory usage per Container is 32Mi');
    const going = await failure(provider.create(spec({ namespace: 'going' })));
    expect(going).toBeInstanceOf(RetryableError);
    expect(going.message).toContain('being terminated');
    await provider.create(spec({ namespace: 'full' }));
    expect(await failure(provider.create(spec({ namespace: 'full' })))).toBeInstanceOf(QuotaExceededError);
  });
});

describe('kubernetes provider: the Secret of a Pod', () => {
  it('a duplicate create in a full namespace adopts the Pod and keeps the Secret it mounts', async () => {
    fake.setPodQuota('limited', undefined);
    fake.setNamespaceRules('limited', undefined);
    fake.setPodQuota('limited', 1);
    const s = spec({ namespace: 'limited' });
    await provider.create(s);
    const before = fake.secret('limited', secretName(s.name));
    expect(before).toBeDefined();
    const again = await provider.create(s);
    expect(again.name).toBe(s.name);
    expect(fake.secret('limited', secretName(s.name))?.metadata.uid).toBe(before?.metadata.uid);
  });

  it('the Secret is owned by its Pod: a Pod deleted out of band takes its Secret with it', async () => {
    const s = spec();
    await provider.create(s);
    const pod = fake.pod('default', s.name);
    const secret = fake.secret('default', secretName(s.name));
    expect(Reflect.get(secret?.metadata ?? {}, 'ownerReferences')).toEqual([
      { apiVersion: 'v1', kind: 'Pod', name: s.name, uid: pod?.metadata.uid },
    ]);
    fake.deletePodOutOfBand('default', s.name);
    await eventually(() => expect(fake.secret('default', secretName(s.name))).toBeUndefined(), 10_000);
  });
});

describe('kubernetes provider: an Unschedulable Pod', () => {
  const build = (unschedulableSeconds: number) =>
    createKubernetesProvider({
      provider: {
        name: 'k8s',
        type: 'kubernetes',
        catalogue: {},
        options: {
          ...fake.access(),
          namespace: 'default',
          unschedulableSeconds,
          placement: { nodeSelectors: { pool: ['later'] } },
        },
        rolloutBudget: 2,
      },
      path: 'config.providers.0',
      config: { installationId: 'it' },
      logger,
    });

  it('stays Pending while the autoscaler may add a node, and runs on the node that arrives', async () => {
    const p = build(60);
    const s = spec({ nodeSelector: { pool: 'later' } });
    await p.create(s);
    await eventually(
      () =>
        expect(fake.pod('default', s.name)?.status.conditions).toContainEqual(
          expect.objectContaining({ type: 'PodScheduled', status: 'False' }),
        ),
      10_000,
    );
    expect((await p.get(s.name)).state).toBe('Pending');
    fake.addNode({ name: 'later-1', labels: { pool: 'later' } });
    await eventually(async () => expect((await p.get(s.name)).state).toBe('Running'), 15_000);
  });
});

describe('kubernetes provider: a Pod its node never confirms stopped', () => {
  it('is force-deleted once deletionTimestamp + forceDeleteAfterSeconds has passed', async () => {
    // The provider's clock: the test moves it past the deadline instead of waiting for it.
    let ahead = 0;
    const p = createKubernetesProvider({
      provider: {
        name: 'k8s',
        type: 'kubernetes',
        catalogue: {},
        options: {
          ...fake.access(),
          namespace: 'default',
          terminationGracePeriodSeconds: 1,
          forceDeleteAfterSeconds: 60,
        },
        rolloutBudget: 2,
      },
      path: 'config.providers.0',
      config: { installationId: 'it' },
      logger,
      now: () => Date.now() + ahead,
    });
    const s = spec();
    await p.create(s);
    await eventually(async () => expect((await p.get(s.name)).state).toBe('Running'), 15_000);
    fake.faults.stuckTerminating = true;
    try {
      await p.delete(s.name);
      expect((await p.get(s.name)).state).toBe('Terminated');
      // Past deletionTimestamp (1 s after the delete) but short of it + 60 s: a delete is not forced yet.
      ahead += 30_000;
      await p.delete(s.name);
      expect(fake.pod('default', s.name)).toBeDefined();
      ahead += 32_000;
      await p.delete(s.name);
      expect(fake.pod('default', s.name)).toBeUndefined();
      await expect(p.get(s.name)).rejects.toMatchObject({ code: 'NotFound' });
    } finally {
      fake.faults.stuckTerminating = false;
    }
  });
});
