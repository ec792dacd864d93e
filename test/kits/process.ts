/**
 * The `process` provider's kit: a real relay agent running real proxy processes, commands and
 * reports over the Pub/Sub emulator, reports applied to the Firestore emulator.
 */
import { findByMarkers } from '../../relay/backends/process/processes.js';
import { proxyProcesses } from '../guarantees/support/processes.js';
import { relayGround } from '../guarantees/support/grounds.js';
import { proxyPorts, startRelayHarness } from '../support/relay-harness.js';
import type { ProviderKit } from './kit.js';

export const processKit = {
  type: 'process',
  contract: {
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
  },
  guarantees: {
    servingPhase: 'Ready',
    fullCounts: true,
    start: (o) =>
      relayGround(o, {
        type: 'process',
        placement: { bindAddress: '127.0.0.1' },
        backend: (stateDir) => ({
          provider: o.provider,
          type: 'process',
          stateDir,
          bindAddresses: ['127.0.0.1'],
          portRange: o.ports,
        }),
        // Proxy processes, found in /proc by their state directory.
        counts: (h) => proxyProcesses(h.stateDir),
      }),
  },
  e2e: { absent: 'the local stack runs it by default: test/e2e/local-stack.test.ts and the other e2e files' },
} satisfies ProviderKit;
