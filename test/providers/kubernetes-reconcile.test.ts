/**
 * The reconcile loop, GC and the health monitor with the `kubernetes` provider against the fake
 * Kubernetes API: Pods that vanish, fail, hang in Terminating, another installation's Pods, RBAC.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/load.js';
import { instanceName } from '../../shared/domain/names.js';
import { checkProviders } from '../../shared/health.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { probeThroughProxy } from '../../shared/probe/probe.js';
import { fingerprintOf, TlsPinError } from '../../shared/tls/pinned.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { presentedCertificate } from '../support/pinned-proxy.js';
import { eventually } from '../support/eventually.js';
import { applyRequest, settle } from '../support/reconcile-steps.js';
import { startKubeHarness, type KubeHarness } from '../support/kube-harness.js';

const NS = 'egress';
let h: KubeHarness;

const apply = (name: string) => applyRequest(name, 'k8s');
const podOf = (proxy: string, installation = 'it') => h.fake.pod(NS, instanceName(installation, proxy));
const uidOf = (proxy: string) => podOf(proxy)?.metadata.uid;
const reasons = async (proxy: string) => (await h.proxies.events(proxy, 50)).map((e) => `${e.reason}: ${e.message}`);

beforeAll(async () => {
  h = await startKubeHarness('k8s-reconcile', { gcGraceSeconds: 60 }, { namespace: NS }, { namespaces: [NS] });
}, 60_000);
afterAll(() => h?.close(), 60_000);

describe('kubernetes provider through the reconciler', () => {
  it('apply → Pod → probe through the proxy → Ready, with the Pod IP as the address', async () => {
    await h.proxies.apply(apply('k-1'), Date.now(), Date.now());
    await settle(h.deps, 'k-1', (p) => p === 'Ready');
    const doc = (await h.proxies.get('k-1'))?.doc;
    const pod = podOf('k-1');
    expect(doc?.status.address).toBe(`${pod?.status.podIP}:8888`);
    expect(pod?.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'egress',
      'egress.dev/installation': 'it',
      'egress.dev/proxy': 'k-1',
      'egress.dev/spec-hash': doc?.status.instance?.specHash,
    });
  });

  it("reports the Pod's TLS sidecar on the next port; the probe goes through it and pins the certificate made in the Pod", async () => {
    await h.proxies.apply(apply('k-tls'), Date.now(), Date.now());
    await settle(h.deps, 'k-tls', (p) => p === 'Ready');
    const doc = (await h.proxies.get('k-tls'))?.doc;
    const ip = podOf('k-tls')?.status.podIP ?? '';
    const { tlsPort, tlsFingerprint } = doc?.status.instance ?? {};
    expect(tlsPort).toBe(8889);
    expect(tlsFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(doc?.status.health?.tlsFingerprint).toBe(tlsFingerprint);
    expect(doc?.status.conditions.find((c) => c.type === 'TlsPinned')).toMatchObject({ status: 'True' });
    // A client meets the pinned certificate at the Pod, and its credentials work inside TLS.
    const certificate = await presentedCertificate(ip, 8889, tlsFingerprint);
    expect(fingerprintOf(certificate.raw)).toBe(tlsFingerprint);
    const credentials = await h.proxies.credentials('k-tls', { incarnation: doc?.createdAt ?? '' });
    const through = (fingerprint: string | undefined) =>
      probeThroughProxy({
        host: ip,
        port: 8888,
        username: credentials?.username ?? '',
        password: credentials?.password ?? '',
        echoUrl: h.echo.url,
        timeoutMs: 5000,
        tls: { port: 8889, fingerprint },
      });
    expect(await through(tlsFingerprint)).toMatchObject({ ok: true, tlsFingerprint });
    // A wrong pin: no credentials are sent, the listener is refused.
    const wrong = await through('ab'.repeat(32));
    expect(wrong.ok).toBe(false);
    expect(wrong.tlsFingerprint).toBe(tlsFingerprint);
    await expect(presentedCertificate(ip, 8889, 'ab'.repeat(32))).rejects.toThrow(TlsPinError);
    // Gone again: the later cases count this installation's Pods.
    await h.proxies.requestDelete('k-tls', Date.now(), Date.now());
    await settle(h.deps, 'k-tls', (p) => p === undefined);
  });

  it('a Pod deleted behind our back is recreated', async () => {
    const before = uidOf('k-1');
    h.fake.deletePodOutOfBand(NS, instanceName('it', 'k-1'));
    await settle(h.deps, 'k-1', (p) => p !== 'Ready');
    await settle(h.deps, 'k-1', (p) => p === 'Ready' && uidOf('k-1') !== before);
    expect(uidOf('k-1')).toBeDefined();
    expect(await reasons('k-1')).toEqual(
      expect.arrayContaining([expect.stringMatching(/^Replace:stopped: .*Terminated/)]),
    );
  });

  it('a Failed Pod is replaced', async () => {
    const before = uidOf('k-1');
    h.fake.evict(NS, instanceName('it', 'k-1'));
    await settle(h.deps, 'k-1', (p) => p === 'Ready' && uidOf('k-1') !== before);
    expect(h.fake.pods(NS).filter((p) => p.metadata.labels?.['egress.dev/proxy'] === 'k-1')).toHaveLength(1);
  });

  it('a Pod stuck terminating is not treated as gone: no second Pod, no finalise, until it really goes', async () => {
    await h.proxies.apply(apply('k-2'), Date.now(), Date.now());
    await settle(h.deps, 'k-2', (p) => p === 'Ready');
    const [uid1, uid2] = [uidOf('k-1'), uidOf('k-2')];
    h.fake.faults.stuckTerminating = true;
    try {
      h.fake.deletePodOutOfBand(NS, instanceName('it', 'k-1'));
      await h.proxies.requestDelete('k-2', Date.now(), Date.now());
      // Ten checks back to back: nothing on this path keeps time short of forceDeleteAfterSeconds
      // (60 s here; its own test drives the provider's clock past it), so pauses between them add nothing.
      for (let i = 0; i < 10; i++) await runCheck(h.deps, { names: ['k-1', 'k-2'] });
      expect((await h.proxies.get('k-1'))?.doc.status.phase).toBe('Replacing');
      expect((await h.proxies.get('k-2'))?.doc.status.phase).toBe('Deleting');
      for (const [proxy, uid] of [
        ['k-1', uid1],
        ['k-2', uid2],
      ] as const) {
        expect(podOf(proxy)?.metadata.uid).toBe(uid);
        expect(podOf(proxy)?.metadata.deletionTimestamp).toBeDefined();
      }
      const creates = h.fake.requests.filter((r) => r.method === 'POST' && r.resource === 'pods' && r.code === 201);
      const countBefore = creates.length;
      await runCheck(h.deps, { names: ['k-1', 'k-2'] });
      expect(
        h.fake.requests.filter((r) => r.method === 'POST' && r.resource === 'pods' && r.code === 201),
      ).toHaveLength(countBefore);
    } finally {
      h.fake.faults.stuckTerminating = false;
    }
    await settle(h.deps, 'k-1', (p) => p === 'Ready' && uidOf('k-1') !== uid1);
    await eventually(async () => {
      await runCheck(h.deps, { names: ['k-2'] });
      expect(await h.proxies.get('k-2')).toBeUndefined();
    }, 20_000);
    expect(podOf('k-2')).toBeUndefined();
    expect(h.fake.secret(NS, `${instanceName('it', 'k-2')}-proxy`)).toBeUndefined();
  });

  it('a Secret left without its Pod is removed with the proxy (one more delete before finalise)', async () => {
    await h.proxies.apply(apply('k-3'), Date.now(), Date.now());
    await settle(h.deps, 'k-3', (p) => p === 'Ready');
    const secret = `${instanceName('it', 'k-3')}-proxy`;
    // A Secret without an owner (written before Secrets were owned by their Pod) outlives its Pod.
    const stored = h.fake.secret(NS, secret);
    if (stored) Reflect.deleteProperty(stored.metadata, 'ownerReferences');
    h.fake.deletePodOutOfBand(NS, instanceName('it', 'k-3'));
    await eventually(() => expect(podOf('k-3')).toBeUndefined(), 10_000, 50);
    expect(h.fake.secret(NS, secret)).toBeDefined();
    await h.proxies.requestDelete('k-3', Date.now(), Date.now());
    await eventually(async () => {
      await runCheck(h.deps, { names: ['k-3'] });
      expect(await h.proxies.get('k-3')).toBeUndefined();
    }, 20_000);
    expect(h.fake.secret(NS, secret)).toBeUndefined();
    expect(podOf('k-3')).toBeUndefined();
  });

  it('two installations in one namespace never touch each other’s Pods', async () => {
    const emu = emulatorEnv('k8s-other');
    const db = createFirestore(emu.projectId);
    const config = parseConfig({ ...h.config, installationId: 'other', gcGraceSeconds: 60 });
    const registry = createRegistry({
      config,
      relays: new FirestoreRelayRepository(db, h.logger),
      bus: h.bus,
      logger: h.logger,
    });
    const proxies = new FirestoreProxyRepository(db, h.logger);
    const other: CheckDeps = { ...h.deps, config, registry, proxies };
    try {
      // The same proxy name in both installations: two Pods, each owned by its own installation.
      await proxies.apply(apply('k-1'), Date.now(), Date.now());
      await settle(other, 'k-1', (p) => p === 'Ready');
      expect(podOf('k-1', 'other')?.metadata.uid).not.toBe(uidOf('k-1'));
      const ours = uidOf('k-1');
      // An orphan of the other installation (no proxy document owns it).
      const provider = registry.get('k8s');
      await provider?.create({
        name: instanceName('other', 'orphan'),
        proxy: 'orphan',
        installationId: 'other',
        specHash: 'x',
        port: 0,
        placement: {},
        credentials: { username: 'u', password: 'p-orphan' },
      });
      const later = () => Date.now() + 3_600_000;
      const mine = await collectGarbage({ ...h.deps, now: later });
      expect(mine[0]).toMatchObject({ deleted: [] });
      expect(mine[0]?.listed).toBe(1);
      expect(podOf('orphan', 'other')).toBeDefined();
      const theirs = await collectGarbage({ ...other, now: later });
      expect(theirs[0]?.deleted).toEqual([instanceName('other', 'orphan')]);
      await proxies.requestDelete('k-1', Date.now(), Date.now());
      await eventually(async () => {
        await runCheck(other, { names: ['k-1'] });
        expect(await proxies.get('k-1')).toBeUndefined();
      }, 20_000);
      expect(uidOf('k-1')).toBe(ours);
      expect(podOf('k-1')?.metadata.deletionTimestamp).toBeUndefined();
      expect((await h.proxies.get('k-1'))?.doc.status.phase).toBe('Ready');
    } finally {
      await db.terminate();
    }
  });

  it('a missing RBAC verb shows up in provider health by name, and nothing is created until it is granted', async () => {
    h.fake.deny('delete', 'secrets', NS);
    try {
      const [down] = await checkProviders({ registry: h.registry, providerStatus: h.providerStatus, logger: h.logger });
      expect(down).toMatchObject({ name: 'k8s', status: 'Unhealthy' });
      expect(down?.message).toContain('delete secrets');
      const stored = await h.providerStatus.get('k8s');
      expect(stored?.message).toMatch(/namespace egress: missing RBAC permission: delete secrets/);
      expect(stored?.detail?.[NS]?.ok).toBe(false);
      await h.proxies.apply(apply('k-3'), Date.now(), Date.now());
      await runCheck({ ...h.deps, providerStatus: h.providerStatus }, { names: ['k-3'] });
      const provisioned = (await h.proxies.get('k-3'))?.doc.status.conditions.find((c) => c.type === 'Provisioned');
      expect(provisioned).toMatchObject({ status: 'Unknown', reason: 'ProviderDown' });
      expect(provisioned?.message).toContain('delete secrets');
      expect(podOf('k-3')).toBeUndefined();
    } finally {
      h.fake.allowAll();
    }
    const [up] = await checkProviders({ registry: h.registry, providerStatus: h.providerStatus, logger: h.logger });
    expect(up?.status).toBe('Healthy');
    await settle(h.deps, 'k-3', (p) => p === 'Ready');
  });

  it('a namespace quota answers QuotaExceeded and the proxy backs off, then proceeds once there is room', async () => {
    h.fake.setPodQuota(NS, h.fake.pods(NS).length);
    await h.proxies.apply(apply('k-4'), Date.now(), Date.now());
    await eventually(async () => {
      await runCheck(h.deps, { names: ['k-4'] });
      const status = (await h.proxies.get('k-4'))?.doc.status;
      expect(status?.retry?.reason).toBe('QuotaExceeded');
      expect(status?.conditions.find((c) => c.type === 'Provisioned')?.reason).toBe('QuotaExceeded');
    }, 10_000);
    expect(podOf('k-4')).toBeUndefined();
    expect(h.fake.secret(NS, `${instanceName('it', 'k-4')}-proxy`)).toBeUndefined();
    h.fake.setPodQuota(NS, undefined);
    await settle(h.deps, 'k-4', (p) => p === 'Ready');
  });

  it('an unreachable API server freezes the provider’s proxies and GC, and they carry on when it is back', async () => {
    h.fake.setDown(true);
    try {
      // The monitor notices first (the reconciler trusts its fresh verdict).
      const [down] = await checkProviders({ registry: h.registry, providerStatus: h.providerStatus, logger: h.logger });
      expect(down?.status).toBe('Unhealthy');
      expect(down?.message).toMatch(/Kubernetes API http:\/\/127\.0\.0\.1:\d+ is not usable/);
      await runCheck(h.deps, { names: ['k-4'] });
      const doc = (await h.proxies.get('k-4'))?.doc;
      expect(doc?.status.phase).toBe('Ready');
      expect(doc?.status.conditions.find((c) => c.type === 'Provisioned')?.reason).toBe('ProviderDown');
      const gc = await collectGarbage({ ...h.deps, now: () => Date.now() + 3_600_000 });
      expect(gc[0]?.skipped).toMatch(/down/);
    } finally {
      h.fake.setDown(false);
    }
    await checkProviders({ registry: h.registry, providerStatus: h.providerStatus, logger: h.logger });
    await settle(h.deps, 'k-4', (p) => p === 'Ready');
    const doc = (await h.proxies.get('k-4'))?.doc;
    expect(doc?.status.conditions.find((c) => c.type === 'Provisioned')?.reason).toBe('Running');
  });
});
