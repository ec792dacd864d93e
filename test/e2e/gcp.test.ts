/**
 * The `gcp` provider through the functions on the emulators, as a user drives it: `npm start` with
 * the sample config pointed at the fake Compute API, the sample proxies published to the request
 * topic, Ready (probed through each VM's real proxy), then deleted.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProxyDocuments } from '../../shared/domain/documents.js';
import { instanceName } from '../../shared/domain/names.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { eventually } from '../support/eventually.js';
import {
  expectLoadedLazily,
  expectServesOnlyWithCredentials,
  localConfigFrom,
  proxyOf,
  publishRequest,
  publishUntilReady,
} from './provider-stack.js';
import { processesMatching, startLocalStack, type RunningStack } from './stack.js';

const OFFSET = 400;
const dir = mkdtempSync(join(tmpdir(), 'egress-e2e-gcp-'));
const samples = parseProxyDocuments(readFileSync('docs/samples/gcp.yaml', 'utf8'));
let fake: FakeGce;
let stack: RunningStack;

const proxy = (name: string) => proxyOf(stack, name);
const publish = (body: unknown) => publishRequest(stack, body);
const vmOf = (name: string) => fake.find(instanceName('prod', name));

/** The sample config with the Compute endpoint pointed at the fake, and local intervals. */
function configFor(endpoint: FakeGce['endpoint']): string {
  return localConfigFrom('docs/samples/config/gcp.yaml', dir, (options) => ({ ...options, ...endpoint }));
}

beforeAll(async () => {
  fake = await startFakeGce();
  stack = await startLocalStack({
    EGRESS_PORT_OFFSET: String(OFFSET),
    EGRESS_SAMPLES: 'none',
    EGRESS_CONFIG: configFor(fake.endpoint),
  });
});

afterAll(async () => {
  if (stack && stack.process.exitCode === null) await stack.interrupt();
  await fake?.close();
});

describe('e2e: gcp provider through the functions', () => {
  it('the function bundles load the Compute SDK only when a gcp provider is used', () => {
    expectLoadedLazily('@google-cloud/compute');
  });

  it('the sample proxies published to proxy-requests become Ready as VMs, reachable with their credentials', async () => {
    await publishUntilReady(stack, samples, 120_000);
    expect(vmOf('gce-eu-spot')).toMatchObject({ zone: 'europe-west1-b', project: 'my-project' });
    expect(vmOf('gce-eu-spot')?.body.scheduling).toMatchObject({ provisioningModel: 'SPOT' });
    expect(vmOf('gce-east')?.body.machineType).toBe('zones/us-east1-b/machineTypes/e2-small');
    for (const doc of samples) {
      const name = doc.metadata.name;
      const status = (await proxy(name))?.status;
      const vm = vmOf(name);
      expect(status?.address).toBe(`${vm?.natIP}:${doc.spec.port || 3128}`);
      // Each VM egresses from its own external address.
      expect(status?.health?.egressIp).toBe(vm?.natIP);
      expect(vm?.body.labels).toMatchObject({ 'egress-installation': 'prod', 'egress-proxy': name });
      await expectServesOnlyWithCredentials(stack, name, String(status?.address), 8088 + OFFSET);
    }
    const health = (await stack.db.collection('providers').doc('gce').get()).data();
    expect(health?.['status']).toBe('Healthy');
  });

  it('a delete request removes the VM (and its proxy), the document and the credentials', async () => {
    for (const doc of samples) await publish({ ...doc, action: 'delete' });
    await eventually(
      async () => {
        for (const doc of samples) {
          const name = doc.metadata.name;
          expect(await proxy(name)).toBeUndefined();
          expect(vmOf(name)).toBeUndefined();
          expect((await stack.db.collection('credentials').doc(name).get()).exists).toBe(false);
        }
      },
      60_000,
      500,
    );
    expect(processesMatching(`--gce-fake=${fake.guestMarker}`)).toEqual([]);
  });

  it('Ctrl-C stops the stack cleanly', async () => {
    expect(await stack.interrupt()).toBe(0);
  });
});
