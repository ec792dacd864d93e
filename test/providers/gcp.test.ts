/**
 * The `gcp` provider against the shared contract, as the functions build it (`createRegistry`,
 * instrumented), with `@google-cloud/compute` talking REST to the wire-level fake in
 * `test/fakes/gce/`. The fake's VMs run real proxy processes on their own loopback addresses.
 */
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { appendFileSync, mkdirSync } from 'node:fs';
import { parseConfig } from '../../shared/config/load.js';
import { createLogger } from '../../shared/logger.js';
import { createRegistry } from '../../shared/providers/registry.js';
import type { Bus } from '../../shared/bus/pubsub.js';
import type { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { startFakeGce } from '../fakes/gce/index.js';
import { runProviderContract } from './contract.case.js';

runProviderContract({
  type: 'gcp',
  timeoutMs: 20_000,
  skip: [
    { reason: 'probesRemotely is false: the check function probes gcp instances', tests: ['remote-health'] },
    { reason: 'no listSince: GC lists Compute whole', tests: ['list-since-vouch'] },
  ],
  async setup() {
    const fake = await startFakeGce();
    mkdirSync('test-results', { recursive: true });
    const logger = createLogger({
      write: (l) => appendFileSync('test-results/contract-gcp.log', `${l}\n`),
      level: 'DEBUG',
    });
    const config = parseConfig({
      installationId: 'it',
      echoUrl: 'http://127.0.0.1:1/',
      providers: [
        {
          name: 'gce',
          type: 'gcp',
          // The echo endpoint is on loopback, on a port of its own: the guests' tinyproxy (its
          // ConnectPort lines) admits it only with a policy that allows it.
          egress: localEgressPolicy([]),
          options: { project: 'contract-project', zone: 'us-central1-a', operationWaitSeconds: 5, ...fake.endpoint },
        },
      ],
    });
    // The gcp provider uses neither: it talks to Compute only.
    const unused = {} as FirestoreRelayRepository & Bus;
    const registry = createRegistry({ config, relays: unused, bus: unused, logger });
    const provider = registry.get('gce');
    if (!provider) throw new Error('registry built no gcp provider');
    // Loads the Compute client before the first test's deadline runs: its import takes seconds,
    // many more on a loaded machine.
    await provider.list();
    return {
      provider,
      installationId: config.installationId,
      placement: { machineType: 'e2-small' },
      invalidPlacement: { placement: { zone: 'mars-central1-a' }, field: 'spec.placement.zone' },
      async kill(instance) {
        fake.stopInstance(instance.name);
        return Promise.resolve();
      },
      // The insert is accepted and its operation fails after create stopped waiting for it
      // (operationWaitSeconds above), as a zone out of resources does.
      failLater(spec) {
        fake.inject({
          method: 'instances.insert',
          instance: spec.name,
          kind: 'operationError',
          code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
          afterMs: 6000,
        });
        return spec;
      },
      cleanup: () => fake.close(),
    };
  },
});
