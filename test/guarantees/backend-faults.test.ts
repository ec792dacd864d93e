/**
 * Backend faults through the wire-level fakes (Compute Engine, Kubernetes) and a relay's reported
 * inventory: quota, permanent, transient, slow and down. Checks run cycle after cycle on a
 * simulated clock; provider calls are counted and must stay within the backoff schedule (no hot
 * loop), a failed get never becomes a create, and GC deletes nothing when a listing fails or is
 * partial.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PubSub } from '@google-cloud/pubsub';
import { createPubSubBus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import { instanceName } from '../../shared/domain/names.js';
import type { ApplyRequest } from '../../shared/domain/proxy.js';
import { createLogger } from '../../shared/logger.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { collectGarbage, type GcDeps } from '../../shared/reconcile/gc.js';
import type { RelayReport } from '../../shared/wire/protocol.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { eventually } from '../support/eventually.js';
import { startGceHarness, type GceHarness } from '../support/gce-harness.js';
import { startKubeHarness, type KubeHarness } from '../support/kube-harness.js';
import { countingRegistry, ProviderStats, type ProviderHooks } from './support/counting-provider.js';
import { Figures } from './support/figures.js';
import { orphanSpec } from './support/orphans.js';

const figures = new Figures('backend-faults', 0);
const BASE_S = 2;
const MAX_S = 32;
const CYCLES = 8;
const STEP_MS = 25_000;
let fake: FakeGce;
let echo: EchoServer;
let gce: GceHarness;
let kube: KubeHarness;

const apply = (name: string, provider: string): ApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name, labels: {} },
  spec: { provider, placement: {}, port: 0 },
});

/**
 * The most creates the backoff schedule allows in `totalMs` after the first: attempt n+1 waits
 * at least min(max, base·2^(n-1)) after attempt n.
 */
function backoffBound(totalMs: number): number {
  let attempts = 1;
  let elapsed = 0;
  for (;;) {
    elapsed += Math.min(MAX_S * 1000, BASE_S * 1000 * 2 ** (attempts - 1));
    if (elapsed > totalMs) return attempts;
    attempts++;
  }
}

/** Check deps over a counting registry and a clock the test moves. */
function counted(deps: CheckDeps, hooks?: ProviderHooks) {
  const stats = new ProviderStats();
  const clock = { now: Date.now() };
  const registry = countingRegistry(deps.registry, stats, hooks);
  return { stats, clock, deps: { ...deps, registry, now: () => clock.now } satisfies CheckDeps };
}

/** `CYCLES` checks of `names`, `STEP_MS` of simulated time apart (a sweep every cycle, and kicks). */
async function cycles(c: ReturnType<typeof counted>, names: string[], n = CYCLES): Promise<void> {
  for (let i = 0; i < n; i++) {
    c.clock.now += STEP_MS;
    await runCheck(c.deps, { names });
    figures.add('checkCycles');
  }
}

beforeAll(async () => {
  fake = await startFakeGce();
  echo = await startEchoServer();
  const overrides = { backoffBaseSeconds: BASE_S, backoffMaxSeconds: MAX_S, gcGraceSeconds: 1 };
  gce = await startGceHarness('faults-gce', fake, echo, overrides, { operationWaitSeconds: 0.3 });
  kube = await startKubeHarness('faults-kube', overrides);
}, 90_000);

afterAll(async () => {
  figures.report();
  await kube?.close();
  await gce?.close();
  await echo?.close();
  await fake?.close();
}, 60_000);

describe('guarantee: backend faults cause no hot loop', () => {
  it(`Compute Engine: quota, transient, permanent and failing gets over ${CYCLES} check cycles stay within the backoff bound`, async () => {
    const c = counted(gce.deps);
    const faults = {
      'f-quota': { method: 'instances.insert', kind: 'quota' },
      'f-rate': { method: 'instances.insert', kind: 'rateLimit' },
      'f-transient': { method: 'instances.insert', kind: 'serverError' },
      'f-dropped': { method: 'instances.insert', kind: 'drop' },
      'f-permanent': { method: 'instances.insert', kind: 'invalidField', field: 'resource.machineType' },
    } as const;
    for (const [name, fault] of Object.entries(faults)) {
      fake.inject({ ...fault, instance: instanceName('it', name), times: Infinity });
      figures.add(`faults.gce.${fault.kind}`);
      await gce.proxies.apply(apply(name, 'gce'), c.clock.now, c.clock.now);
    }
    // Its VM exists (the first cycle creates it); then every get of it fails.
    await gce.proxies.apply(apply('f-get-fails', 'gce'), c.clock.now, c.clock.now);
    const names = [...Object.keys(faults), 'f-get-fails'];
    const inserts = fake.count('instances.insert');
    await cycles(c, names, 1);
    fake.inject({
      method: 'instances.get',
      kind: 'serverError',
      instance: instanceName('it', 'f-get-fails'),
      times: Infinity,
    });
    figures.add('faults.gce.serverError');
    await cycles(c, names, CYCLES - 1);
    const bound = backoffBound(CYCLES * STEP_MS);
    const creates = (name: string) => c.stats.creates.get(instanceName('it', name)) ?? 0;
    for (const name of ['f-quota', 'f-rate', 'f-transient', 'f-dropped']) {
      expect(creates(name), name).toBeGreaterThanOrEqual(2);
      expect(creates(name), name).toBeLessThanOrEqual(bound);
      figures.max('gce.maxCreatesPerProxy', creates(name));
    }
    expect(creates('f-permanent')).toBe(1);
    expect((await gce.proxies.get('f-permanent'))?.doc.status.phase).toBe('Failed');
    // A failing get is no information: neither a second create nor a delete.
    expect(creates('f-get-fails')).toBe(1);
    expect(c.stats.deletes.get(instanceName('it', 'f-get-fails')) ?? 0).toBe(0);
    expect(c.stats.count('get')).toBeLessThanOrEqual(CYCLES * names.length);
    figures.add('gce.backoffBound', bound);
    figures.add('gce.providerCreates', c.stats.count('create'));
    figures.add('gce.providerGets', c.stats.count('get'));
    figures.add('gce.insertRequests', fake.count('instances.insert') - inserts);
    fake.clearFaults();
  }, 60_000);

  it('Compute Engine down: no create, one get per proxy per cycle, and GC deletes nothing', async () => {
    const c = counted(gce.deps);
    await gce.proxies.apply(apply('f-down', 'gce'), c.clock.now, c.clock.now);
    fake.setDown(true);
    figures.add('faults.gce.down');
    try {
      await cycles(c, ['f-down'], 8);
      const reports = await collectGarbage({ ...gcOf(c.deps), now: () => c.clock.now });
      expect(reports[0]?.skipped).toMatch(/provider down|listing failed/);
      expect(reports[0]?.deleted).toEqual([]);
    } finally {
      fake.setDown(false);
    }
    expect(c.stats.count('create')).toBe(0);
    expect(c.stats.count('delete')).toBe(0);
    expect(c.stats.count('get')).toBeLessThanOrEqual(8);
  }, 60_000);

  it('a slow insert under three concurrent checks reaches the backend once', async () => {
    const c = counted(gce.deps);
    fake.inject({ method: 'instances.insert', kind: 'slow', delayMs: 1500, instance: instanceName('it', 'f-slow') });
    figures.add('faults.gce.slow');
    await gce.proxies.apply(apply('f-slow', 'gce'), c.clock.now, c.clock.now);
    await Promise.all([1, 2, 3].map(() => runCheck(c.deps, { names: ['f-slow'] })));
    expect(c.stats.creates.get(instanceName('it', 'f-slow'))).toBe(1);
    expect(c.stats.overlappingCreates.size).toBe(0);
  }, 30_000);

  it.each([
    ['quota (403 exceeded quota)', { kind: 'quota', verb: 'create', resource: 'pods' }, 'retry'],
    ['transient (500)', { kind: 'serverError', verb: 'create', resource: 'pods' }, 'retry'],
    ['unavailable (503)', { kind: 'unavailable', verb: 'create', resource: 'pods' }, 'retry'],
    ['permanent (422 Invalid)', { kind: 'invalid', verb: 'create', resource: 'pods' }, 'once'],
    ['failing gets (500 on get)', { kind: 'serverError', verb: 'get', resource: 'pods' }, 'never'],
  ] as const)(
    'Kubernetes %s stays within the backoff bound',
    async (what, fault, expected) => {
      const name = `k-${fault.kind}-${fault.verb}`.toLowerCase();
      const c = counted(kube.deps);
      const remove = kube.fake.inject({ ...fault });
      figures.add(`faults.kube.${fault.kind}`);
      try {
        await kube.proxies.apply(apply(name, 'k8s'), c.clock.now, c.clock.now);
        await cycles(c, [name], CYCLES);
      } finally {
        remove();
      }
      const creates = c.stats.creates.get(instanceName('it', name)) ?? 0;
      const bound = backoffBound(CYCLES * STEP_MS);
      figures.max('kube.maxCreatesPerProxy', creates);
      figures.add('kube.providerCreates', creates);
      if (expected === 'retry') expect([creates >= 2, creates <= bound], what).toEqual([true, true]);
      if (expected === 'once') expect(creates, what).toBe(1);
      if (expected === 'never') expect(creates, what).toBe(0);
      expect(c.stats.count('get')).toBeLessThanOrEqual(CYCLES);
    },
    60_000,
  );
});

function gcOf(deps: CheckDeps): GcDeps {
  return { config: deps.config, registry: deps.registry, proxies: deps.proxies, logger: deps.logger };
}

describe('guarantee: GC never deletes on a failed or partial listing', () => {
  it('Compute Engine: an unreachable zone skips GC; a partial listing deletes only what it shows', async () => {
    const provider = gce.registry.get('gce');
    await provider?.create(orphanSpec('it', 'gc-orphan-1'));
    await provider?.create(orphanSpec('it', 'gc-orphan-2'));
    const orphans = ['gc-orphan-1', 'gc-orphan-2'].map((proxy) => instanceName('it', proxy));
    await eventually(async () => {
      const states = await Promise.all(orphans.map(async (name) => (await provider?.get(name))?.state));
      expect(states, `${orphans.join(', ')} booted`).toEqual(['Running', 'Running']);
    }, 10_000);
    const later = () => Date.now() + 60_000;
    fake.unreachableZones.add('europe-west1-b');
    figures.add('faults.gce.unreachableZone');
    const deletes = fake.count('instances.delete');
    const skipped = await collectGarbage({ ...gcOf(gce.deps), now: later });
    fake.unreachableZones.clear();
    expect(skipped[0]).toMatchObject({ deleted: [] });
    expect(skipped[0]?.skipped).toMatch(/listing failed/);
    expect(fake.count('instances.delete')).toBe(deletes);
    // A listing that shows one orphan (and hides every owned VM): only that orphan goes.
    const stats = new ProviderStats();
    const partial = countingRegistry(gce.registry, stats, {
      list: (real) => real.filter((i) => i.proxy === 'gc-orphan-1'),
    });
    const collected = await collectGarbage({ ...gcOf(gce.deps), registry: partial, now: later });
    expect(collected[0]?.deleted).toEqual([instanceName('it', 'gc-orphan-1')]);
    expect(fake.find(instanceName('it', 'gc-orphan-2'))).toBeDefined();
    figures.add('gcDeletionsOnFailedListing', 0);
  }, 60_000);

  it('Kubernetes: a failing pod listing or an API that is down skips GC', async () => {
    const provider = kube.registry.get('k8s');
    await provider?.create(orphanSpec('it', 'gc-korphan'));
    const later = () => Date.now() + 60_000;
    for (const fault of ['list-500', 'down'] as const) {
      const remove =
        fault === 'down'
          ? (kube.fake.setDown(true), () => kube.fake.setDown(false))
          : kube.fake.inject({ kind: 'serverError', verb: 'list', resource: 'pods' });
      figures.add(`faults.kube.${fault}`);
      try {
        const reports = await collectGarbage({ ...gcOf(kube.deps), now: later });
        expect(reports[0]?.deleted, fault).toEqual([]);
        expect(reports[0]?.skipped, fault).toBeDefined();
      } finally {
        remove();
      }
    }
    expect(kube.fake.pod('default', instanceName('it', 'gc-korphan'))).toBeDefined();
  }, 60_000);

  it('a relay whose listing failed, or which went silent, leaves its instances to the next GC', async () => {
    const emu = emulatorEnv('faults-relay');
    const db = createFirestore(emu.projectId);
    const logger = createLogger({ write: () => undefined });
    const pubsub = new PubSub({ projectId: emu.projectId });
    const config = parseConfig({
      installationId: 'it',
      echoUrl: 'http://127.0.0.1:9/',
      gcGraceSeconds: 1,
      providers: [{ name: 'proc', type: 'process', relay: 'sim', options: { heartbeatTimeoutSeconds: 1 } }],
    });
    const relays = new FirestoreRelayRepository(db, logger);
    // The functions' clock: the test moves it past the heartbeat timeout instead of waiting that long.
    let ahead = 0;
    const now = () => Date.now() + ahead;
    const registry = createRegistry({ config, relays, bus: createPubSubBus(pubsub), logger, now });
    const deps: GcDeps = { config, registry, proxies: new FirestoreProxyRepository(db, logger), logger, now };
    const orphanItem = {
      name: instanceName('it', 'r-orphan'),
      proxy: 'r-orphan',
      provider: 'proc',
      installationId: 'it',
      specHash: 'orphan0',
      state: 'Running' as const,
      ip: '127.0.0.1',
      port: 20001,
      createdAt: 1,
    };
    await pubsub.createTopic('relay-commands');
    const report = (seq: number, ok: boolean, sentAt = now()): RelayReport => ({
      relay: 'sim',
      bootId: 'b',
      seq,
      sentAt,
      startedAt: 1,
      providers: [{ name: 'proc', type: 'process', ok, message: ok ? 'ok' : 'inventory unavailable: disk' }],
      instances: ok ? [orphanItem] : [],
      results: [],
    });
    try {
      await relays.applyReport(report(1, true), now());
      await relays.applyReport(report(2, false), now());
      figures.add('faults.relay.listingFailed');
      const failed = (await collectGarbage(deps))[0];
      expect(failed?.deleted).toEqual([]);
      expect(failed?.skipped).toMatch(/inventory unavailable/);
      // Silent for longer than the heartbeat timeout: down, skipped.
      await relays.applyReport(report(3, true), now());
      ahead += 1200;
      figures.add('faults.relay.silent');
      const silent = (await collectGarbage(deps))[0];
      expect(silent?.deleted).toEqual([]);
      expect(silent?.skipped).toMatch(/provider down: relay sim last reported/);
      await relays.applyReport(report(4, true), now());
      // Current and complete again: the orphan is collected (the command goes to the relay).
      expect((await collectGarbage(deps))[0]?.deleted).toEqual([instanceName('it', 'r-orphan')]);
    } finally {
      await pubsub.close();
      await db.terminate();
    }
  }, 30_000);
});
