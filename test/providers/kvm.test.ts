/**
 * The `kvm` provider against the shared contract, end to end as the functions use it: the
 * relay-backed provider publishes commands on the Pub/Sub emulator, a real relay agent runs the
 * kvm backend against a real libvirtd (test driver for the domains, storage driver for the
 * overlays and seeds), and its reports are applied to the Firestore emulator.
 */
import { startKvmHost, type KvmHost } from '../support/kvm-host.js';
import { loopbackOnlyProbe } from '../support/loopback-probe.js';
import { startRelayHarness } from '../support/relay-harness.js';
import { runProviderContract } from './contract.case.js';

const RELAY = 'contract-kvm';

runProviderContract({
  type: 'kvm',
  timeoutMs: 20_000,
  async setup() {
    const host: KvmHost = await startKvmHost();
    const h = await startRelayHarness(
      RELAY,
      [24100, 24109],
      { providers: [{ name: 'lab', type: 'kvm', relay: RELAY, options: { heartbeatTimeoutSeconds: 30 } }] },
      {
        backends: (stateDir) => [
          {
            provider: 'lab',
            type: 'kvm',
            stateDir,
            hosts: { h1: host.hostConfig() },
            connectTimeoutSeconds: 2,
            callTimeoutSeconds: 10,
          },
        ],
        probe: loopbackOnlyProbe,
      },
    );
    const provider = h.registry.get('lab');
    if (!provider) throw new Error('registry built no provider');
    return {
      provider,
      installationId: h.config.installationId,
      placement: { host: 'h1' },
      invalidPlacement: { placement: { host: 'nowhere' }, field: 'spec.placement.host' },
      async kill(instance) {
        // Out of band, as an operator or the host would: the guest is gone, its definition stays.
        await host.domains.destroyDomain(await host.domains.lookupDomainByName(instance.name));
      },
      async cleanup() {
        await h.close();
        await host.close();
      },
    };
  },
  skip: [
    {
      reason:
        "libvirt's test driver runs no guests (and no guest image can be fetched offline): no proxy of ours serves at the address it makes up",
      tests: ['the instance is reachable through the proxy with its credentials, and refuses without'],
    },
  ],
});
