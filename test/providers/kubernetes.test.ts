/**
 * The `kubernetes` provider against the shared contract, built by the registry as the functions
 * build it, talking HTTP to the wire-level fake API whose Pods run real proxy processes.
 */
import { startKubeHarness } from '../support/kube-harness.js';
import { runProviderContract } from './contract.case.js';

runProviderContract({
  type: 'kubernetes',
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
});
