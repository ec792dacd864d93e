/**
 * The `kvm` provider's kit: a real relay agent with its kvm backend. The contract boots real guests
 * under libvirtd's qemu driver in a network namespace of the test's own (test/support/qemu-host.ts:
 * the Debian test image with the backend's NoCloud seed); the guarantee worlds run on libvirt's
 * test driver (test/support/kvm-host.ts), whose domains run no guest. libvirt's test driver also
 * covers the fast cases in test/integration/kvm-backend.test.ts.
 */
import { relayGround, tally } from '../guarantees/support/grounds.js';
import { startKvmHost } from '../support/kvm-host.js';
import { loopbackOnlyProbe } from '../support/loopback-probe.js';
import { startQemuHost, type QemuHost } from '../support/qemu-host.js';
import { startRelayHarness } from '../support/relay-harness.js';
import type { ProviderKit } from './kit.js';

const RELAY = 'contract-kvm';

export const kvmKit = {
  type: 'kvm',
  contract: {
    bootsGuests: true,
    // A guest serves 30–55 s after its start under TCG on an idle 2-core machine; five at once take longer.
    timeoutMs: 240_000,
    // Each guest is a qemu process emulating its CPU: more than two at once on two cores, beside the
    // e2e files, do not all boot within the timeout.
    concurrentCreates: 2,
    async setup() {
      const host: QemuHost = await startQemuHost();
      const h = await startRelayHarness(
        RELAY,
        [24100, 24109],
        { providers: [{ name: 'lab', type: 'kvm', relay: RELAY, options: { heartbeatTimeoutSeconds: 60 } }] },
        {
          echoHost: host.hostIp,
          backends: (stateDir) => [
            {
              provider: 'lab',
              type: 'kvm',
              stateDir,
              hosts: { h1: { ...host.hostConfig(), vcpus: 2, memoryMiB: 512 } },
              connectTimeoutSeconds: 5,
              callTimeoutSeconds: 30,
              // The default fence, plus the echo endpoint on the test host's address (private, as a
              // lab's echo would be) as an exception: without it the guest's proxy refuses the probe.
              egress: { allow: [{ cidr: `${host.hostIp}/32`, ports: [[1024, 65535]] }] },
            },
          ],
        },
      );
      const provider = h.registry.get('lab');
      if (!provider) throw new Error('registry built no provider');
      return {
        provider,
        installationId: h.config.installationId,
        placement: { host: 'h1' },
        invalidPlacement: { placement: { host: 'nowhere' }, field: 'spec.placement.host' },
        echoHost: host.hostIp,
        // The relay accepts the command and its backend knows no such host: a Failed report.
        failLater: (spec) => ({ ...spec, placement: { host: 'nowhere' } }),
        async kill(instance) {
          // As the host would lose it: the guest's qemu process dies, its definition stays.
          process.kill(await host.qemuPid(instance.name), 'SIGKILL');
        },
        async cleanup() {
          await h.close();
          await host.close();
        },
      };
    },
  },
  guarantees: {
    // libvirt's test driver runs no guest, so the relay's probe reaches no proxy: a live proxy serves
    // as Unhealthy, and the world holds `unhealthyAfter` out of reach so that this is no replacement.
    servingPhase: 'Unhealthy',
    fullCounts: false,
    async start(o) {
      const kvm = await startKvmHost();
      return relayGround(o, {
        type: 'kvm',
        placement: { host: 'h1' },
        backend: (stateDir) => ({
          provider: o.provider,
          type: 'kvm',
          stateDir,
          hosts: { h1: kvm.hostConfig() },
          callTimeoutSeconds: 30,
          startupGraceSeconds: 0,
        }),
        config: { unhealthyAfter: 1_000_000 },
        harness: { probe: loopbackOnlyProbe },
        // Domains, as libvirt lists them.
        counts: async () =>
          tally((await kvm.domains.listAllDomains()).map((d) => d.name).filter((n) => n.startsWith('ep-'))),
        close: () => kvm.close(),
      });
    },
  },
  e2e: {
    absent:
      'its guests need libvirtd and a test network the local stack does not start; the contract boots real ones (test/providers/contract-guests.test.ts)',
  },
} satisfies ProviderKit;
