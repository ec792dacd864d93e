/**
 * The gce fake checks an insert's `scheduling`, `serviceAccounts` and `accessConfigs` as Compute
 * does (test/fakes/gce/insert-rules.ts cites the references), and the gcp provider's inserts, Spot
 * and standard, pass those checks. An interface without an access config gets no external address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { createGcpProvider } from '../../shared/providers/gcp/index.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { instanceSpec } from '../support/instance-spec.js';

const logger = createLogger({ write: () => undefined, level: 'ERROR' });
const PROJECT = 'rules-project';
const ZONE = 'us-central1-a';
let fake: FakeGce;

beforeAll(async () => {
  fake = await startFakeGce();
});
afterAll(() => fake?.close());

const provider = () =>
  createGcpProvider({
    provider: {
      name: 'gce',
      type: 'gcp',
      catalogue: {},
      rolloutBudget: 2,
      options: { project: PROJECT, zone: ZONE, operationWaitSeconds: 3, ...fake.endpoint },
    },
    path: 'config.providers.0',
    config: { installationId: 'it' },
    logger,
  });

const url = (path: string) => `http://127.0.0.1:${fake.port}/compute/v1/projects/${PROJECT}/zones/${ZONE}/${path}`;

/** A valid insert body, with `over` merged in. */
function body(name: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name,
    machineType: `zones/${ZONE}/machineTypes/e2-micro`,
    disks: [
      {
        boot: true,
        initializeParams: { sourceImage: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64' },
      },
    ],
    networkInterfaces: [{ network: 'global/networks/default', accessConfigs: [{ type: 'ONE_TO_ONE_NAT' }] }],
    ...over,
  };
}

async function insert(b: Record<string, unknown>): Promise<{ status: number; text: string }> {
  const res = await fetch(url('instances'), {
    method: 'POST',
    body: JSON.stringify(b),
    headers: { 'content-type': 'application/json' },
  });
  return { status: res.status, text: await res.text() };
}

describe('gce fake: scheduling, service accounts and access configs', () => {
  it('accepts the inserts the provider sends, Spot and standard', async () => {
    for (const [name, spot] of [
      ['rules-std', false],
      ['rules-spot', true],
    ] as const) {
      const s = { ...instanceSpec('rules', { spot }), name };
      await provider().create(s);
      expect(fake.find(name)?.body.scheduling).toMatchObject({ provisioningModel: spot ? 'SPOT' : 'STANDARD' });
    }
  });

  it.each([
    [
      'a Spot VM that restarts automatically',
      { scheduling: { provisioningModel: 'SPOT', automaticRestart: true } },
      'resource.scheduling.preemptible',
    ],
    [
      'preemptible on the STANDARD model',
      { scheduling: { preemptible: true, provisioningModel: 'STANDARD', automaticRestart: false } },
      'resource.scheduling.provisioningModel',
    ],
    [
      'a termination action on a standard VM',
      { scheduling: { instanceTerminationAction: 'DELETE' } },
      'resource.scheduling.instanceTerminationAction',
    ],
    [
      'two service accounts',
      { serviceAccounts: [{ email: 'default' }, { email: 'default' }] },
      'resource.serviceAccounts',
    ],
    ['a service account without an email', { serviceAccounts: [{ scopes: [] }] }, 'resource.serviceAccounts[0].email'],
    [
      'two access configs',
      { networkInterfaces: [{ accessConfigs: [{}, {}] }] },
      'resource.networkInterfaces[0].accessConfigs',
    ],
    [
      'an access config of another type',
      { networkInterfaces: [{ accessConfigs: [{ type: 'DIRECT_IPV6' }] }] },
      'resource.networkInterfaces[0].accessConfigs[0].type',
    ],
  ])('refuses %s: 400 invalid on the field', async (_, over, field) => {
    const answer = await insert(body('rules-refused', over));
    expect(answer.status).toBe(400);
    expect(answer.text).toContain(`Invalid value for field '${field}'`);
    expect(fake.find('rules-refused')).toBeUndefined();
  });

  it('an interface without an access config gets no external address', async () => {
    const answer = await insert(
      body('rules-internal', { networkInterfaces: [{ network: 'global/networks/default' }] }),
    );
    expect(answer.status).toBe(200);
    const vm = (await (await fetch(url('instances/rules-internal'))).json()) as {
      networkInterfaces: { accessConfigs: unknown[] }[];
    };
    expect(vm.networkInterfaces[0]?.accessConfigs).toEqual([]);
  });
});
