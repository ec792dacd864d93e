/**
 * The reconcile loop and GC with the `gcp` provider against the fake Compute API: an insert that
 * fails after create returned, quota backoff, a VM stopped behind our back, and two installations
 * sharing one project.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { instanceName } from '../../shared/domain/names.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { probeThroughProxy } from '../../shared/probe/probe.js';
import { runCheck } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { eventually } from '../support/eventually.js';
import { presentedCertificate } from '../support/pinned-proxy.js';
import { fingerprintOf } from '../../shared/tls/pinned.js';
import { applyRequest, settle } from '../support/reconcile-steps.js';
import { startGceHarness, type GceHarness } from '../support/gce-harness.js';

let fake: FakeGce;
let echo: EchoServer;
let h: GceHarness;

const apply = (name: string) => applyRequest(name, 'gce');
const provisioned = async (harness: GceHarness, name: string) =>
  (await harness.proxies.get(name))?.doc.status.conditions.find((c) => c.type === 'Provisioned');
const vmOf = (proxy: string, installation = 'it') => fake.find(instanceName(installation, proxy));

beforeAll(async () => {
  fake = await startFakeGce();
  echo = await startEchoServer();
  // A short wait on operations: creates return Pending and failures arrive "later", through get.
  h = await startGceHarness('gcp-reconcile', fake, echo, {}, { operationWaitSeconds: 0.3 });
  // Loads the Compute client before a test's own deadline runs: its import takes seconds, many
  // more on a loaded machine.
  await h.provider.list();
}, 90_000);
afterAll(async () => {
  await h?.close();
  await echo?.close();
  await fake?.close();
}, 60_000);

describe('gcp provider through the reconciler', () => {
  it('apply → VM → cloud-init proxy → probe through it → Ready, with the external IP as the address', async () => {
    await h.proxies.apply(apply('g-1'), Date.now(), Date.now());
    await settle(h.deps, 'g-1', (p) => p === 'Ready');
    const doc = (await h.proxies.get('g-1'))?.doc;
    const vm = vmOf('g-1');
    expect(doc?.status.address).toBe(`${vm?.natIP}:3128`);
    expect(doc?.status.health?.egressIp).toBe(vm?.natIP);
    expect(vm?.body.labels).toMatchObject({
      'egress-managed': 'true',
      'egress-installation': 'it',
      'egress-provider': 'gce',
      'egress-proxy': 'g-1',
      'egress-spec': doc?.status.instance?.specHash,
    });
  });

  it("reports the VM's TLS listener on the next port; the check's probe goes through it and pins its certificate", async () => {
    await h.proxies.apply(apply('g-tls'), Date.now(), Date.now());
    await settle(h.deps, 'g-tls', (p) => p === 'Ready');
    const doc = (await h.proxies.get('g-tls'))?.doc;
    const vm = vmOf('g-tls');
    const { tlsPort, tlsFingerprint } = doc?.status.instance ?? {};
    expect(tlsPort).toBe(3129);
    expect(tlsFingerprint).toMatch(/^[0-9a-f]{64}$/);
    expect(doc?.status.health?.tlsFingerprint).toBe(tlsFingerprint);
    expect(doc?.status.conditions.find((c) => c.type === 'TlsPinned')).toMatchObject({ status: 'True' });
    // A client at the external address meets the certificate that was pinned.
    const certificate = await presentedCertificate(vm?.natIP ?? '', 3129, tlsFingerprint);
    expect(fingerprintOf(certificate.raw)).toBe(tlsFingerprint);
  });

  it('the probe reaches the VM at its internal address (over the VPC); clients reach it at the external one', async () => {
    await h.proxies.apply(apply('g-vpc'), Date.now(), Date.now());
    await settle(h.deps, 'g-vpc', (p) => p === 'Ready');
    const doc = (await h.proxies.get('g-vpc'))?.doc;
    const vm = vmOf('g-vpc');
    expect(vm?.networkIP).not.toBe(vm?.natIP);
    // Every probe so far went to networkIP: nothing came in through the external address.
    expect(doc?.status.health).toMatchObject({ ok: true, egressIp: vm?.natIP });
    expect(vm?.guest?.externalConnections).toBe(0);
    // A client uses the address discovery gives, through the VM's NAT.
    const credentials = await h.proxies.credentials('g-vpc', { incarnation: doc?.createdAt ?? '' });
    const [host = '', port = ''] = (doc?.status.address ?? '').split(':');
    const client = await probeThroughProxy({
      host,
      port: Number(port),
      username: credentials?.username ?? '',
      password: credentials?.password ?? '',
      echoUrl: echo.url,
      timeoutMs: 3000,
    });
    expect(client).toMatchObject({ ok: true, egressIp: vm?.natIP });
    expect(vm?.guest?.externalConnections).toBe(1);
  });

  it('a VM stopped behind our back is replaced by a new one', async () => {
    const before = vmOf('g-1')?.id;
    fake.stopInstance(instanceName('it', 'g-1'));
    await settle(h.deps, 'g-1', (p) => p !== 'Ready');
    await settle(h.deps, 'g-1', (p) => p === 'Ready' && vmOf('g-1')?.id !== before, 30_000);
    expect(fake.instances().filter((vm) => vm.body.labels?.['egress-proxy'] === 'g-1')).toHaveLength(1);
    const events = (await h.proxies.events('g-1', 50)).map((e) => `${e.reason}: ${e.message}`);
    expect(events).toEqual(expect.arrayContaining([expect.stringMatching(/^Replace:stopped: .*(Stopped|Terminated)/)]));
  });

  it('an insert whose operation fails later ends with the error on Provisioned, and is retried after the backoff', async () => {
    const name = 'g-async';
    fake.inject({
      method: 'instances.insert',
      kind: 'operationError',
      code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
      afterMs: 900,
      instance: instanceName('it', name),
    });
    await h.proxies.apply(apply(name), Date.now(), Date.now());
    await eventually(
      async () => {
        await runCheck(h.deps, { names: [name] });
        expect(await provisioned(h, name)).toMatchObject({ status: 'False', reason: 'QuotaExceeded' });
      },
      15_000,
      200,
    );
    expect((await provisioned(h, name))?.message).toContain('ZONE_RESOURCE_POOL_EXHAUSTED');
    expect((await h.proxies.get(name))?.doc.status.retry).toMatchObject({ reason: 'QuotaExceeded', attempts: 1 });
    await settle(h.deps, name, (p) => p === 'Ready', 30_000);
  });

  it('an asynchronous permanent failure fails the proxy naming the field, and is not retried', async () => {
    const name = 'g-invalid';
    fake.inject({
      method: 'instances.insert',
      kind: 'operationError',
      code: 'INVALID_FIELD_VALUE',
      location: 'resource.machineType',
      afterMs: 900,
      instance: instanceName('it', name),
    });
    await h.proxies.apply(apply(name), Date.now(), Date.now());
    await settle(h.deps, name, (p) => p === 'Failed', 15_000);
    expect(await provisioned(h, name)).toMatchObject({ status: 'False', reason: 'PermanentError' });
    expect((await provisioned(h, name))?.message).toContain('spec.placement.machineType');
    const inserts = fake.count('instances.insert');
    for (let i = 0; i < 5; i++) await runCheck(h.deps, { names: [name] });
    expect(fake.count('instances.insert')).toBe(inserts);
    expect((await h.proxies.get(name))?.doc.status.phase).toBe('Failed');
  });

  it('quota errors give reason QuotaExceeded and back off instead of hot-looping', async () => {
    const name = 'g-quota';
    fake.inject({ method: 'instances.insert', kind: 'quota', instance: instanceName('it', name) });
    await h.proxies.apply(apply(name), Date.now(), Date.now());
    const inserts = fake.count('instances.insert');
    await runCheck(h.deps, { names: [name] });
    const status = (await h.proxies.get(name))?.doc.status;
    expect(status?.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({ reason: 'QuotaExceeded' });
    expect(Date.parse(status?.retry?.notBefore ?? '')).toBeGreaterThan(Date.now());
    for (let i = 0; i < 5; i++) {
      const r = await runCheck(h.deps, { names: [name] });
      expect(r.rechecks.find((c) => c.name === name)?.afterMs).toBeGreaterThan(0);
    }
    expect(fake.count('instances.insert')).toBe(inserts + 1);
    await settle(h.deps, name, (p) => p === 'Ready', 30_000);
    expect(fake.count('instances.insert')).toBe(inserts + 2);
  });
});

describe('gcp provider: two installations sharing one project', () => {
  it('never touch each other’s VMs: listing, GC and deletes keep to their own', async () => {
    const a = await startGceHarness('gcp-inst-a', fake, echo, { installationId: 'inst-a', gcGraceSeconds: 0.5 });
    const b = await startGceHarness('gcp-inst-b', fake, echo, { installationId: 'inst-b', gcGraceSeconds: 0.5 });
    try {
      await Promise.all([
        a.proxies.apply(apply('shared-1'), Date.now(), Date.now()),
        b.proxies.apply(apply('shared-1'), Date.now(), Date.now()),
      ]);
      await Promise.all([
        settle(a.deps, 'shared-1', (p) => p === 'Ready'),
        settle(b.deps, 'shared-1', (p) => p === 'Ready'),
      ]);
      const [vmA, vmB] = [vmOf('shared-1', 'inst-a'), vmOf('shared-1', 'inst-b')];
      expect(vmA?.name).not.toBe(vmB?.name);
      // Orphans of each installation: VMs no proxy document owns.
      const orphan = (inst: string) => ({
        name: instanceName(inst, 'orphan'),
        proxy: 'orphan',
        installationId: inst,
        specHash: 'orphan0',
        port: 0,
        placement: {},
        credentials: { username: 'u', password: 'orphan-password' },
      });
      await Promise.all([a.provider.create(orphan('inst-a')), b.provider.create(orphan('inst-b'))]);
      await eventually(
        async () => expect((await a.provider.get(instanceName('inst-a', 'orphan'))).state).toBe('Running'),
        10_000,
      );
      expect((await a.provider.list()).map((i) => i.installationId)).toEqual(['inst-a', 'inst-a']);
      const reportA = await collectGarbage({
        config: a.config,
        registry: a.registry,
        proxies: a.proxies,
        logger: a.logger,
      });
      expect(reportA[0]?.deleted).toEqual([instanceName('inst-a', 'orphan')]);
      expect(fake.find(instanceName('inst-b', 'orphan'))).toBeDefined();
      expect(vmOf('shared-1', 'inst-b')?.status).toBe('RUNNING');
      // B's delete request removes B's VM only.
      await b.proxies.requestDelete('shared-1', Date.now(), Date.now());
      await eventually(
        async () => {
          await runCheck(b.deps, { names: ['shared-1'] });
          expect(await b.proxies.get('shared-1')).toBeUndefined();
        },
        20_000,
        200,
      );
      expect(vmOf('shared-1', 'inst-b')).toBeUndefined();
      expect(vmOf('shared-1', 'inst-a')?.status).toBe('RUNNING');
      const reportB = await collectGarbage({
        config: b.config,
        registry: b.registry,
        proxies: b.proxies,
        logger: b.logger,
      });
      expect(reportB[0]?.deleted).toEqual([instanceName('inst-b', 'orphan')]);
      expect(vmOf('shared-1', 'inst-a')?.status).toBe('RUNNING');
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
