/**
 * The `gcp` provider in projects whose networks are not the default one: a custom VPC, a Shared-VPC
 * subnetwork of a host project, and a project without a `default` network, with the fake holding
 * exactly those networks (test/fakes/gce/networks.ts follows the instances.insert reference).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressError, PermanentError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import type { Provider } from '../../shared/providers/contract.js';
import { createGcpProvider } from '../../shared/providers/gcp/index.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { instanceSpec } from '../support/instance-spec.js';
import { rejectionOf } from '../support/rejection.js';

const logger = createLogger({ write: () => undefined, level: 'ERROR' });
const PROJECT = 'vpc-project';
let fake: FakeGce;
/** The subnetworks these tests place on, allowed by the provider's options. */
const SUBNETWORKS = [
  'proxies',
  'projects/host-project/regions/us-central1/subnetworks/shared-proxies',
  'regions/europe-west1/subnetworks/proxies',
  'nope',
];

const provider = (over: Record<string, unknown> = {}): Provider =>
  createGcpProvider({
    provider: {
      name: 'gce',
      type: 'gcp',
      catalogue: {},
      rolloutBudget: 2,
      options: {
        project: PROJECT,
        zone: 'us-central1-a',
        operationWaitSeconds: 3,
        placement: { subnetworks: SUBNETWORKS },
        ...fake.endpoint,
        ...over,
      },
    },
    path: 'config.providers.0',
    config: { installationId: 'it' },
    logger,
  });

beforeAll(async () => {
  // No `default` network: the project has a custom-mode VPC, and a host project shares a subnetwork.
  fake = await startFakeGce({
    networks: [
      { project: PROJECT, name: 'egress-vpc', subnetworks: ['us-central1/proxies'] },
      { project: 'host-project', name: 'shared', subnetworks: ['us-central1/shared-proxies'] },
    ],
  });
});
afterAll(() => fake?.close());

describe('gcp provider: networks other than default', () => {
  it('places a VM on a custom-VPC subnetwork without naming a network (there is no default one)', async () => {
    const s = instanceSpec('vpc', { subnetwork: 'proxies' });
    await provider().create(s);
    const vm = fake.find(s.name);
    expect(vm?.body.networkInterfaces?.[0]).not.toHaveProperty('network');
    expect(vm?.nic).toEqual({
      network: `projects/${PROJECT}/global/networks/egress-vpc`,
      subnetwork: `projects/${PROJECT}/regions/us-central1/subnetworks/proxies`,
    });
  });

  it('places a VM on a Shared-VPC subnetwork of the host project', async () => {
    const subnetwork = 'projects/host-project/regions/us-central1/subnetworks/shared-proxies';
    const s = instanceSpec('vpc', { subnetwork });
    await provider().create(s);
    expect(fake.find(s.name)?.nic.network).toBe('projects/host-project/global/networks/shared');
  });

  it('without a subnetwork in a project that has no default network: Permanent on spec.placement.network', async () => {
    const err = await rejectionOf(provider().create(instanceSpec('vpc')), EgressError);
    expect(err).toBeInstanceOf(PermanentError);
    expect(err.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.network' });
    expect(err.message).toContain('global/networks/default');
  });

  it('a subnetwork in another region: refused on spec.placement.subnetwork before any insert, as Compute refuses it', async () => {
    const subnetwork = 'regions/europe-west1/subnetworks/proxies';
    const inserts = fake.count('instances.insert');
    const err = await rejectionOf(provider().create(instanceSpec('vpc', { subnetwork })), EgressError);
    expect(err.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.subnetwork' });
    expect(fake.count('instances.insert')).toBe(inserts);
    // The same insert sent anyway: a 400 on the interface's subnetwork.
    const body = {
      name: 'direct',
      machineType: 'zones/us-central1-a/machineTypes/e2-micro',
      disks: [
        {
          boot: true,
          initializeParams: { sourceImage: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64' },
        },
      ],
      networkInterfaces: [{ subnetwork }],
    };
    const url = `http://127.0.0.1:${fake.port}/compute/v1/projects/${PROJECT}/zones/us-central1-a/instances`;
    const res = await fetch(url, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    expect(res.status).toBe(400);
    expect(JSON.stringify(await res.json())).toContain(
      "Invalid value for field 'resource.networkInterfaces[0].subnetwork'",
    );
  });

  it('a subnetwork, network or tag the provider does not list is refused naming the field, before any insert', async () => {
    const inserts = fake.count('instances.insert');
    for (const [placement, field] of [
      [{ subnetwork: 'projects/host-project/regions/us-central1/subnetworks/other' }, 'spec.placement.subnetwork'],
      [{ network: 'egress-vpc' }, 'spec.placement.network'],
      [{ tags: ['egress-proxy', 'allow-ssh'] }, 'spec.placement.tags'],
    ] as const) {
      expect(() => provider().resolvePlacement(placement)).toThrow(
        expect.objectContaining({ code: 'Validation', field }),
      );
      const err = await rejectionOf(provider().create(instanceSpec('vpc', placement)), EgressError);
      expect(err.toInfo()).toMatchObject({ code: 'Permanent', field });
    }
    expect(fake.count('instances.insert')).toBe(inserts);
    // Listed, the same network resolves (own-project and short forms are one network).
    const network = `projects/${PROJECT}/global/networks/egress-vpc`;
    expect(provider({ placement: { networks: ['egress-vpc'] } }).resolvePlacement({ network })).toMatchObject({
      network,
    });
  });

  it('a subnetwork the project does not have: Permanent on spec.placement.subnetwork', async () => {
    const err = await rejectionOf(provider().create(instanceSpec('vpc', { subnetwork: 'nope' })), EgressError);
    expect(err.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.subnetwork' });
  });
});
