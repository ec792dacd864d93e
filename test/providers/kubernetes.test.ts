/**
 * The `kubernetes` provider against the shared contract, built by the registry as the functions
 * build it, talking HTTP to the wire-level fake API whose Pods run real proxy processes.
 */
import { startKubeHarness } from '../support/kube-harness.js';
import { runProviderContract } from './contract.case.js';

runProviderContract({
  type: 'kubernetes',
  timeoutMs: 20_000,
  async setup() {
    const h = await startKubeHarness(
      'contract-kubernetes',
      {},
      { namespace: 'egress', namespaces: ['egress-b'] },
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
      cleanup: () => h.close(),
    };
  },
});
