/**
 * The `gcp` provider's kit: `@google-cloud/compute` talking REST to the wire-level fake Compute API
 * (`test/fakes/gce/`), whose VMs run real proxy processes on loopback addresses of their own.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { expect } from 'vitest';
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { parseConfig } from '../../shared/config/load.js';
import type { Bus } from '../../shared/bus/pubsub.js';
import { instanceName } from '../../shared/domain/names.js';
import { createLogger } from '../../shared/logger.js';
import { createRegistry } from '../../shared/providers/registry.js';
import type { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { processesMatching } from '../e2e/stack.js';
import { startFakeGce } from '../fakes/gce/index.js';
import { cloudGround } from '../guarantees/support/grounds.js';
import type { ProviderKit } from './kit.js';

export const gcpKit = {
  type: 'gcp',
  contract: {
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
  },
  guarantees: {
    servingPhase: 'Ready',
    fullCounts: false,
    async start(o) {
      const fake = await startFakeGce();
      return cloudGround(o, {
        type: 'gcp',
        entry: { project: 'guarantee-project', zone: 'us-central1-a', operationWaitSeconds: 0.3, ...fake.endpoint },
        placement: { machineType: 'e2-small' },
        names: () => fake.instances().map((vm) => vm.name),
        close: () => fake.close(),
      });
    },
  },
  e2e: {
    samples: 'docs/samples/gcp.yaml',
    config: 'docs/samples/config/gcp.yaml',
    sdk: { pkg: '@google-cloud/compute', title: 'Compute' },
    instances: 'VMs',
    removes: 'the VM (and its proxy)',
    defaultPort: 3128,
    readyWithinMs: 120_000,
    async start() {
      const fake = await startFakeGce();
      const vmOf = (name: string) => fake.find(instanceName('prod', name));
      return {
        // The sample's options with the Compute endpoint pointed at the fake.
        options: (sample) => ({ ...sample, ...fake.endpoint }),
        host: (name) => vmOf(name)?.natIP,
        expectPlaced() {
          expect(vmOf('gce-eu-spot')).toMatchObject({ zone: 'europe-west1-b', project: 'my-project' });
          expect(vmOf('gce-eu-spot')?.body.scheduling).toMatchObject({ provisioningModel: 'SPOT' });
          expect(vmOf('gce-east')?.body.machineType).toBe('zones/us-east1-b/machineTypes/e2-small');
        },
        expectServing({ name, status, host }) {
          // Each VM egresses from its own external address.
          expect(status.health?.egressIp).toBe(host);
          expect(vmOf(name)?.body.labels).toMatchObject({ 'egress-installation': 'prod', 'egress-proxy': name });
        },
        expectGone: (name) => expect(vmOf(name)).toBeUndefined(),
        // No VM's proxy process outlives its VM.
        expectNoneLeft: () => expect(processesMatching(`--gce-fake=${fake.guestMarker}`)).toEqual([]),
        close: () => fake.close(),
      };
    },
  },
} satisfies ProviderKit;
