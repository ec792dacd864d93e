/**
 * infra/kubernetes/rbac.yaml against the fake API server's RBAC authorizer: each function that calls
 * providers, authenticated as its service account's email (as GKE authenticates its token), passes
 * the provider's check and can create, read, list and delete a proxy; any other account cannot.
 */
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { functionServiceAccount, providerFunctions, renderRbac } from '../../infra/kubernetes/rbac.js';
import { loadTopology } from '../../infra/local/topology.js';
import { createLogger } from '../../shared/logger.js';
import type { InstanceSpec, Provider } from '../../shared/providers/contract.js';
import { createKubernetesProvider } from '../../shared/providers/kubernetes/index.js';
import { startFakeKube, type FakeKube } from '../fakes/kube/index.js';

const NAMESPACE = 'egress-proxies';
const topology = loadTopology();
const logger = createLogger({ write: () => undefined });
let fake: FakeKube;

/** The provider as a function whose token the API server maps to `account`. */
const providerAs = (account: string, namespace = NAMESPACE): Provider =>
  createKubernetesProvider({
    provider: {
      name: 'k8s',
      type: 'kubernetes',
      catalogue: {},
      options: { server: fake.url, token: fake.addUser(account), namespace, allowUnpinnedImage: true },
      rolloutBudget: 2,
    },
    path: 'config.providers.0',
    config: { installationId: 'it' },
    logger,
  });

const spec = (): InstanceSpec => ({
  name: `ep-rbac-${randomBytes(3).toString('hex')}`,
  proxy: 'rbac',
  installationId: 'it',
  specHash: 'h1',
  port: 0,
  placement: {},
  credentials: { username: 'u', password: randomBytes(12).toString('base64url') },
});

const rbacObjects = (text: string) => parseAllDocuments(text).map((d) => d.toJSON() as unknown);

beforeAll(async () => {
  fake = await startFakeKube({ namespaces: ['default', NAMESPACE] });
  fake.applyRbac(NAMESPACE, rbacObjects(renderRbac(topology, 'my-project')));
});
afterAll(() => fake.close());

describe('infra/kubernetes/rbac.yaml on the fake API server', () => {
  it.each(providerFunctions(topology))('%s’s account passes the provider’s check', async (fn) => {
    const health = await providerAs(functionServiceAccount(fn, 'my-project')).check?.();
    expect(health?.ok).toBe(true);
    expect(health?.message).toContain(`RBAC complete in ${NAMESPACE}`);
  });

  it('lets the check function create, read, list and delete a proxy', async () => {
    const p = providerAs(functionServiceAccount('check', 'my-project'));
    const s = spec();
    await p.create(s);
    expect((await p.get(s.name)).name).toBe(s.name);
    expect((await p.list()).map((i) => i.name)).toContain(s.name);
    await p.delete(s.name);
    const refused = fake.requests.filter(
      (r) => r.user === functionServiceAccount('check', 'my-project') && r.code === 403,
    );
    expect(refused).toEqual([]);
  });

  it('grants nothing to another account of the project, nor in another namespace', async () => {
    const outsider = await providerAs(functionServiceAccount('relay-report', 'my-project')).check?.();
    expect(outsider?.ok).toBe(false);
    expect(outsider?.message).toContain(
      `namespace ${NAMESPACE}: missing RBAC permission: create pods, get pods, list pods, delete pods, create secrets, update secrets, delete secrets`,
    );
    const otherProject = await providerAs(functionServiceAccount('check', 'other-project')).check?.();
    expect(otherProject?.ok).toBe(false);
  });

  it('a Role without one verb is caught by the check, naming it (the authorizer reads the rules)', async () => {
    const text = renderRbac(topology, 'trimmed').replace(/\n {6}- update\n/, '\n');
    expect(text).not.toBe(renderRbac(topology, 'trimmed'));
    fake.applyRbac('default', rbacObjects(text));
    const p = providerAs(functionServiceAccount('gc', 'trimmed'), 'default');
    const health = await p.check?.();
    expect(health?.message).toBe('namespace default: missing RBAC permission: update secrets');
  });
});
