/**
 * The `kvm` provider against the shared contract, end to end as the functions use it, on real
 * guests: the relay-backed provider publishes commands on the Pub/Sub emulator, a real relay agent
 * runs the kvm backend against libvirtd's qemu driver in a network namespace of the test's own
 * (test/support/qemu-host.ts), which boots the Debian test image with the backend's NoCloud seed;
 * its reports are applied to the Firestore emulator. libvirt's test driver still covers the
 * fast cases in test/integration/kvm-backend.test.ts.
 */
import { startQemuHost, type QemuHost } from '../support/qemu-host.js';
import { startRelayHarness } from '../support/relay-harness.js';
import { runProviderContract } from './contract.case.js';

const RELAY = 'contract-kvm';

runProviderContract({
  type: 'kvm',
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
});
