/**
 * The `kubernetes` provider through the functions on the emulators, as a user drives it: `npm start`
 * with the sample config pointed at the fake Kubernetes API, the sample proxies published to the
 * request topic, Ready (probed through each Pod's stunnel sidecar in front of its real proxy, the
 * certificate pinned), reachable by https:// proxy URLs, then deleted.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProxyDocuments } from '../../shared/domain/documents.js';
import { instanceName } from '../../shared/domain/names.js';
import { startFakeKube, type FakeKube } from '../fakes/kube/index.js';
import { eventually } from '../support/eventually.js';
import {
  expectLoadedLazily,
  expectServesOnlyWithCredentials,
  expectServesOverPinnedTls,
  localConfigFrom,
  proxyOf,
  publishRequest,
  publishUntilReady,
} from './provider-stack.js';
import { startLocalStack, type RunningStack } from './stack.js';

const OFFSET = 500;
const NS = 'egress-proxies';
const dir = mkdtempSync(join(tmpdir(), 'egress-e2e-k8s-'));
const samples = parseProxyDocuments(readFileSync('docs/samples/kubernetes.yaml', 'utf8'));
let fake: FakeKube;
let stack: RunningStack;

const proxy = (name: string) => proxyOf(stack, name);
const publish = (body: unknown) => publishRequest(stack, body);
const podOf = (name: string) => fake.pod(NS, instanceName('prod', name));

/** The sample config, with cluster access pointed at the fake and local intervals. */
function configFor(server: string, token: string): string {
  return localConfigFrom('docs/samples/config/kubernetes.yaml', dir, (options) => {
    const { kubeconfig: _file, context: _context, gke: _gke, ...rest } = options;
    return { ...rest, server, token };
  });
}

beforeAll(async () => {
  fake = await startFakeKube({
    namespaces: [NS],
    nodes: [
      { name: 'general' },
      {
        name: 'egress-1',
        labels: { pool: 'egress' },
        taints: [{ key: 'dedicated', value: 'egress', effect: 'NoSchedule' }],
      },
    ],
  });
  const { server, token } = fake.access();
  stack = await startLocalStack({
    EGRESS_PORT_OFFSET: String(OFFSET),
    EGRESS_SAMPLES: 'none',
    EGRESS_CONFIG: configFor(server, token),
  });
});

afterAll(async () => {
  if (stack && stack.process.exitCode === null) await stack.interrupt();
  await fake?.close();
});

describe('e2e: kubernetes provider through the functions', () => {
  it('the function bundles load the Kubernetes SDK only when a kubernetes provider is used', () => {
    expectLoadedLazily('@kubernetes/client-node');
  });

  it('the sample proxies published to proxy-requests become Ready as Pods, reachable with their credentials', async () => {
    await publishUntilReady(stack, samples, 90_000);
    expect(podOf('k8s-dedicated')?.spec.nodeName).toBe('egress-1');
    expect(podOf('k8s-node-ip')?.spec.hostNetwork).toBe(true);
    for (const doc of samples) {
      const name = doc.metadata.name;
      const status = (await proxy(name))?.status;
      const pod = podOf(name);
      const ip = pod?.spec.hostNetwork ? pod.status.hostIP : pod?.status.podIP;
      expect(status?.address).toBe(`${ip}:${doc.spec.port || 8888}`);
      expect(pod?.metadata.labels).toMatchObject({ 'egress.dev/installation': 'prod', 'egress.dev/proxy': name });
      await expectServesOnlyWithCredentials(stack, name, String(status?.address), 8088 + OFFSET);
      // The Pod's stunnel sidecar, with the certificate its init container made, pinned by the probe.
      await expectServesOverPinnedTls(stack, name, ip ?? '', 8088 + OFFSET, join(dir, `${name}.pem`));
    }
    const health = (await stack.db.collection('providers').doc('k8s').get()).data();
    expect(health?.['status']).toBe('Healthy');
  });

  it('a delete request removes the Pod, its Secret, the document and the credentials', async () => {
    for (const doc of samples) await publish({ ...doc, action: 'delete' });
    await eventually(
      async () => {
        for (const doc of samples) {
          const name = doc.metadata.name;
          expect(await proxy(name)).toBeUndefined();
          expect(podOf(name)).toBeUndefined();
          expect(fake.secret(NS, `${instanceName('prod', name)}-proxy`)).toBeUndefined();
          expect((await stack.db.collection('credentials').doc(name).get()).exists).toBe(false);
        }
      },
      60_000,
      500,
    );
  });

  it('Ctrl-C stops the stack cleanly', async () => {
    expect(await stack.interrupt()).toBe(0);
  });
});
