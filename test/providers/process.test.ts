/**
 * The `process` provider against the shared contract, exactly as the functions use it: the
 * relay-backed provider publishes commands on the real Pub/Sub emulator, a real relay agent runs
 * real proxy processes, and its reports are applied to the real Firestore emulator.
 */
import { findByMarkers } from '../../relay/backends/process/processes.js';
import { proxyPorts, startRelayHarness } from '../support/relay-harness.js';
import { runProviderContract } from './contract.case.js';

runProviderContract({
  type: 'process',
  timeoutMs: 20_000,
  async setup() {
    const h = await startRelayHarness('contract-process', proxyPorts(24000, 50));
    const provider = h.registry.get('proc');
    if (!provider) throw new Error('registry built no provider');
    return {
      provider,
      installationId: h.config.installationId,
      placement: { bindAddress: '127.0.0.1' },
      invalidPlacement: { placement: { bindAddress: '10.255.255.1' }, field: 'spec.placement.bindAddress' },
      // The relay accepts the command and its backend refuses the address: a Failed report.
      failLater: (spec) => ({ ...spec, placement: { bindAddress: '10.255.255.1' } }),
      async kill(instance) {
        for (const pid of await findByMarkers([`--egress-proxy=${instance.name}`])) process.kill(pid, 'SIGKILL');
      },
      cleanup: () => h.close(),
    };
  },
});
