/**
 * The `kubernetes` provider's kit: the provider talking HTTP to the wire-level fake Kubernetes API
 * (`test/fakes/kube/`), whose Pods run real proxy processes (and a stunnel sidecar for TLS).
 */
import { join } from 'node:path';
import { expect } from 'vitest';
import { instanceName } from '../../shared/domain/names.js';
import { expectServesOverPinnedTls } from '../e2e/provider-stack.js';
import { startFakeKube } from '../fakes/kube/index.js';
import { cloudGround } from '../guarantees/support/grounds.js';
import { startKubeHarness } from '../support/kube-harness.js';
import type { ProviderKit } from './kit.js';

/** The namespace of the sample config (docs/samples/config/kubernetes.yaml). */
const SAMPLE_NS = 'egress-proxies';

export const kubernetesKit = {
  type: 'kubernetes',
  contract: {
    timeoutMs: 20_000,
    skip: [
      { reason: 'probesRemotely is false: the check function probes Pods', tests: ['remote-health'] },
      { reason: 'no listSince: GC lists the namespaces whole', tests: ['list-since-vouch'] },
    ],
    async setup() {
      const h = await startKubeHarness(
        'contract-kubernetes',
        {},
        // A Pod no node can take is Failed at once (failLater), not after the default ten minutes.
        {
          namespace: 'egress',
          namespaces: ['egress-b'],
          unschedulableSeconds: 0,
          placement: { nodeSelectors: { pool: ['none'] } },
        },
        { namespaces: ['egress', 'egress-b'] },
      );
      return {
        provider: h.provider,
        installationId: h.config.installationId,
        placement: { namespace: 'egress-b' },
        invalidPlacement: { placement: { zone: 'europe-west1-b' }, field: 'spec.placement.zone' },
        // The node evicts the Pod (phase Failed): the process is killed, the object stays.
        async kill(instance) {
          await Promise.resolve(h.fake.evict('egress-b', instance.name));
        },
        // Created, then never scheduled: no node carries the label.
        failLater: (spec) => ({ ...spec, placement: { namespace: 'egress-b', nodeSelector: { pool: 'none' } } }),
        cleanup: () => h.close(),
      };
    },
  },
  guarantees: {
    servingPhase: 'Ready',
    fullCounts: false,
    async start(o) {
      const fake = await startFakeKube({ namespaces: ['default', 'alt'] });
      return cloudGround(o, {
        type: 'kubernetes',
        entry: { ...fake.access(), namespaces: ['alt'] },
        placement: { namespace: 'alt' },
        names: () => fake.pods().map((p) => p.metadata.name),
        close: () => fake.close(),
      });
    },
  },
  e2e: {
    samples: 'docs/samples/kubernetes.yaml',
    config: 'docs/samples/config/kubernetes.yaml',
    sdk: { pkg: '@kubernetes/client-node', title: 'Kubernetes' },
    instances: 'Pods',
    removes: 'the Pod, its Secret',
    defaultPort: 8888,
    readyWithinMs: 90_000,
    async start() {
      const fake = await startFakeKube({
        namespaces: [SAMPLE_NS],
        nodes: [
          { name: 'general' },
          {
            name: 'egress-1',
            labels: { pool: 'egress' },
            taints: [{ key: 'dedicated', value: 'egress', effect: 'NoSchedule' }],
          },
        ],
      });
      const podOf = (name: string) => fake.pod(SAMPLE_NS, instanceName('prod', name));
      return {
        // Cluster access pointed at the fake, in place of the sample's kubeconfig.
        options(sample) {
          const { kubeconfig: _file, context: _context, gke: _gke, ...rest } = sample;
          const { server, token } = fake.access();
          return { ...rest, server, token };
        },
        host(name) {
          const pod = podOf(name);
          return pod?.spec.hostNetwork ? pod.status.hostIP : pod?.status.podIP;
        },
        expectPlaced() {
          expect(podOf('k8s-dedicated')?.spec.nodeName).toBe('egress-1');
          expect(podOf('k8s-node-ip')?.spec.hostNetwork).toBe(true);
        },
        async expectServing({ stack, name, host, echoPort, dir }) {
          expect(podOf(name)?.metadata.labels).toMatchObject({
            'egress.dev/installation': 'prod',
            'egress.dev/proxy': name,
          });
          // The Pod's stunnel sidecar, with the certificate its init container made, pinned by the probe.
          await expectServesOverPinnedTls(stack, name, host, echoPort, join(dir, `${name}.pem`));
        },
        expectGone(name) {
          expect(podOf(name)).toBeUndefined();
          expect(fake.secret(SAMPLE_NS, `${instanceName('prod', name)}-proxy`)).toBeUndefined();
        },
        close: () => fake.close(),
      };
    },
  },
} satisfies ProviderKit;
