/** `egress doctor` against the wire fakes: a healthy project, then one breakage per world, each with its finding and fix. */
import { readFileSync } from 'node:fs';
import { parse } from '@cdktn/hcl2json';
import { afterEach, describe, expect, it } from 'vitest';
import { startFakeGce, type FakeFirewall, type FakeGce, type FakeGceOptions } from '../../test/fakes/gce/index.js';
import { startFakeGoogleApis, type FakeGoogleApis, type FakeProjectState } from '../../test/fakes/google-apis/index.js';
import { parseCommand } from '../args.js';
import type { Io } from '../commands.js';
import { runDoctor } from './index.js';
import { requiredApis } from './plan.js';

const ROOT = new URL('../..', import.meta.url).pathname;
const PROJECT = 'my-project';
const RELAY_ACCOUNT = `egress-relay-lab-1@${PROJECT}.iam.gserviceaccount.com`;
const APIS = requiredApis(readFileSync(`${ROOT}infra/terraform/main.tf`, 'utf8'));
const FIREWALL: FakeFirewall = {
  name: 'egress-proxy-gce',
  network: 'default',
  sourceRanges: ['10.8.0.0/28'],
  targetTags: ['egress-proxy'],
  allow: ['tcp:3128'],
};

function healthy(): FakeProjectState {
  return {
    enabledServices: new Set(APIS),
    policies: new Map(),
    subscriptions: new Set(['relay-commands-lab-1']),
    serviceAccountKeys: new Map([[RELAY_ACCOUNT, 1]]),
    workloadIdentityPools: [],
  };
}

let gce: FakeGce | undefined;
let apis: FakeGoogleApis | undefined;
afterEach(async () => {
  await gce?.close();
  await apis?.close();
  gce = apis = undefined;
});

/** A world: the healthy project changed by `state` and the gce fake's options. */
interface World {
  state?: (s: FakeProjectState) => void;
  gce?: FakeGceOptions;
}

/** Runs doctor on the sample config and fleet against a world; returns the exit code and what it printed. */
async function doctor(world: World = {}, extra: string[] = []): Promise<{ code: number; out: string }> {
  const state = healthy();
  world.state?.(state);
  gce = await startFakeGce({ firewalls: [FIREWALL], ...world.gce });
  apis = await startFakeGoogleApis(state);
  let out = '';
  const io: Io = {
    stdout: { write: (t) => void (out += t), isTTY: false },
    stderr: { write: (t) => void (out += t) },
    env: {},
    cwd: ROOT,
  };
  const argv = ['doctor', '--config', 'docs/samples/config/production.yaml', '-f', 'docs/samples/gcp.yaml'];
  // No --functions-range: the VPC connector's range Terraform creates by default (10.8.0.0/28).
  const command = parseCommand([...argv, ...extra]);
  if (command.verb !== 'doctor') throw new Error('not doctor');
  const code = await runDoctor(io, command, {
    compute: { apiEndpoint: '127.0.0.1', port: gce.port, protocol: 'http' },
    serviceUsage: apis.url,
    orgPolicy: apis.url,
    pubsub: apis.url,
    iam: apis.url,
  });
  return { code, out };
}

describe('egress doctor: a healthy project', () => {
  // The first test loads @google-cloud/compute (seconds on a loaded machine).
  it('passes every check and exits 0, having read each part of the project', { timeout: 60_000 }, async () => {
    const { code, out } = await doctor();
    expect(out).toBe(`egress doctor: ${PROJECT}: no findings; every check passed\n`);
    expect(code).toBe(0);
    for (const method of ['networks.get', 'firewalls.list', 'regions.get', 'machineTypes.get'] as const)
      expect(gce?.count(method), method).toBeGreaterThan(0);
    const paths = apis?.requests.join('\n') ?? '';
    for (const part of [
      'services:batchGet',
      'compute.vmExternalIpAccess:getEffectivePolicy',
      'subscriptions/relay-commands-lab-1',
      '/keys?',
    ])
      expect(paths).toContain(part);
  });
});

const BREAKAGES: { name: string; world: World; finding: string; fix: string }[] = [
  {
    name: 'an API disabled',
    world: { state: (s: FakeProjectState) => s.enabledServices.delete('compute.googleapis.com') },
    finding: '[apis]',
    fix: `fix: gcloud services enable compute.googleapis.com --project=${PROJECT}`,
  },
  {
    name: 'an organisation policy refusing external IPs',
    world: { state: (s: FakeProjectState) => s.policies.set('compute.vmExternalIpAccess', [{ denyAll: true }]) },
    finding: 'compute.vmExternalIpAccess refuses external IPs',
    fix: `gcloud org-policies set-policy policy.yaml`,
  },
  {
    name: 'no default network',
    world: { gce: { networks: [] } },
    finding: 'network default does not exist',
    fix: `fix: gcloud compute networks create default --subnet-mode=auto --project=${PROJECT}`,
  },
  {
    name: 'an in-use address quota too low',
    world: { gce: { quotas: { 'us-central1': { IN_USE_ADDRESSES: 0 } } } },
    finding: 'IN_USE_ADDRESSES in us-central1 of my-project: the fleet needs 1, the quota leaves 0',
    fix: `https://console.cloud.google.com/iam-admin/quotas?project=${PROJECT}`,
  },
  {
    name: 'a CPU quota too low',
    world: { gce: { quotas: { 'us-east1': { CPUS: 1 } } } },
    finding: 'CPUS in us-east1 of my-project: the fleet needs 2, the quota leaves 1',
    fix: `gcloud compute regions describe us-east1 --project=${PROJECT}`,
  },
  {
    name: 'no firewall path from the functions to the proxy port',
    world: { gce: { firewalls: [{ ...FIREWALL, sourceRanges: ['203.0.113.0/24'] }] } },
    finding: 'admits 10.8.0.0/28 to tcp:3128 on tags egress-proxy',
    fix: `--allow=tcp:3128 --target-tags=egress-proxy --source-ranges=10.8.0.0/28`,
  },
  {
    name: "the relay's subscription missing",
    world: { state: (s: FakeProjectState) => s.subscriptions.clear() },
    finding: 'relay lab-1: its subscription relay-commands-lab-1 does not exist',
    fix: 'fix: terraform apply',
  },
  {
    name: "the relay's account without a key or a Workload Identity pool",
    world: { state: (s: FakeProjectState) => s.serviceAccountKeys.set(RELAY_ACCOUNT, 0) },
    finding: 'has no key and the project no Workload Identity pool',
    fix: `fix: gcloud iam service-accounts keys create key.json --iam-account=${RELAY_ACCOUNT}`,
  },
  {
    name: 'key creation disabled with no Workload Identity pool',
    world: {
      state: (s: FakeProjectState) => s.policies.set('iam.disableServiceAccountKeyCreation', [{ enforce: true }]),
    },
    finding: 'iam.disableServiceAccountKeyCreation is enforced',
    fix: `disable-enforce iam.disableServiceAccountKeyCreation --project=${PROJECT}`,
  },
];

// Each world starts the fakes and loads the Compute client: seconds while other files load both cores.
describe('egress doctor: one breakage per world', { timeout: 60_000 }, () => {
  it.each(BREAKAGES)('$name', async ({ world, finding, fix }) => {
    const { code, out } = await doctor(world);
    expect(out).toContain('1 finding(s)');
    expect(out).toContain(finding);
    expect(out).toContain(fix);
    expect(code).toBe(1);
  });

  it('--functions-range names a range other than the connector default: a rule for 10.8.0.0/28 does not admit it', async () => {
    const { code, out } = await doctor({}, ['--functions-range', '10.9.0.0/28']);
    expect(out).toContain('admits 10.9.0.0/28 to tcp:3128 on tags egress-proxy');
    expect(code).toBe(1);
  });

  it('domain-restricted sharing matters only with --api-public', async () => {
    const restricted = {
      state: (s: FakeProjectState) =>
        s.policies.set('iam.allowedPolicyMemberDomains', [{ values: { allowedValues: ['C0abc'] } }]),
    };
    expect((await doctor(restricted)).code).toBe(0);
    await gce?.close();
    await apis?.close();
    const { code, out } = await doctor(restricted, ['--api-public']);
    expect(out).toContain('iam.allowedPolicyMemberDomains restricts members');
    expect(out).toContain('set api_public = false');
    expect(code).toBe(1);
  });
});

describe('egress doctor: the command line', () => {
  it.each(['10.8.0.0/33', '10.8.0.256/28', '10.8.0.0'])('refuses --functions-range %s', (range) => {
    expect(() => parseCommand(['doctor', '--config', 'c.yaml', '--proxies', '1', '--functions-range', range])).toThrow(
      /--functions-range must be an IPv4 CIDR range/,
    );
  });
});

describe('egress doctor: the plan', () => {
  it("reads main.tf's APIs as HashiCorp's parser does", async () => {
    const text = readFileSync(`${ROOT}infra/terraform/main.tf`, 'utf8');
    const parsed = JSON.stringify(await parse('main.tf', text));
    const block = /"google_project_service":\{"apis":\[\{[^\]]*?"for_each":"\$\{toset\(\[([^\]]*)\]\)\}"/.exec(parsed);
    const fromParser = [...(block?.[1] ?? '').matchAll(/\\"([a-z0-9.-]+)\\"/g)].map((m) => m[1]);
    expect(fromParser.length).toBeGreaterThan(5);
    expect(requiredApis(text)).toEqual(fromParser);
  });
});
