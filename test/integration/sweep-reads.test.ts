/**
 * What a sweep reads, on the real Firestore emulator with the real relay-backed provider (its relay
 * simulated by reports, on a virtual clock): a settled proxy is confirmed from its stored status
 * while its instance has not changed, any change is observed by the next sweep even without a kick,
 * a directly probed proxy's credentials are read once per incarnation, and a warm instance's sweep
 * reads only the proxies written since its last.
 */
import { DocumentReference } from '@google-cloud/firestore';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Bus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import { instanceName } from '../../shared/domain/names.js';
import type { ApplyRequest } from '../../shared/domain/proxy.js';
import { specHash } from '../../shared/domain/spec-hash.js';
import { NotFoundError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import type { ProbeOptions } from '../../shared/probe/probe.js';
import type { Instance, Provider } from '../../shared/providers/contract.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { SweepCache } from '../../shared/reconcile/sweep-cache.js';
import type { InventoryItem } from '../../shared/wire/protocol.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('sweep-reads');
const db = createFirestore(emu.projectId);
const logger = createLogger({ write: () => undefined });
const relays = new FirestoreRelayRepository(db, logger, 600_000);
const proxies = new FirestoreProxyRepository(db, logger);
const config = parseConfig({
  installationId: 'it',
  echoUrl: 'http://127.0.0.1:9/',
  providers: [{ name: 'proc', type: 'process', relay: 'sim', options: { heartbeatTimeoutSeconds: 86_400 } }],
});
const bus: Bus = { publish: () => Promise.resolve('kick not delivered') };
const relayed = createRegistry({ config, relays, bus, logger });

/**
 * A provider the check function probes itself (like gcp or kubernetes); `gone` instances are
 * NotFound. An instance that comes back after a delete is a new one with a later `createdAt`, as a
 * real backend's: probes remember credentials per instance by it.
 */
const gone = new Set<string>();
const deletions = new Map<string, number>();
const direct: Provider = {
  name: 'direct',
  type: 'gcp',
  probesRemotely: false,
  resolvePlacement: (p) => p,
  create: (spec) => Promise.resolve(running(spec.name, spec.proxy, spec.specHash)),
  get: (name) =>
    gone.has(name)
      ? Promise.reject(new NotFoundError(`${name} is gone`))
      : Promise.resolve(running(name, name.replace(/^ep-|-[0-9a-f]{8}$/g, ''), directHash)),
  delete: (name) => {
    gone.add(name);
    deletions.set(name, (deletions.get(name) ?? 0) + 1);
    return Promise.resolve();
  },
  list: () => Promise.resolve([]),
  check: () => Promise.resolve({ ok: true, message: 'ok', latencyMs: 0 }),
};
let directHash = '';
const running = (name: string, proxy: string, specHash: string): Instance => ({
  name,
  proxy,
  installationId: 'it',
  specHash,
  state: 'Running',
  ip: '10.0.0.9',
  port: 3128,
  createdAt: base - 60_000 + 1000 * (deletions.get(name) ?? 0),
});

const base = Date.now();
let clock = base;
const probes: ProbeOptions[] = [];
let probeOk = true;
const deps: CheckDeps = {
  config,
  proxies,
  logger,
  bus,
  registry: { get: (n) => (n === 'direct' ? direct : relayed.get(n)), missing: () => 'none', all: () => [] },
  now: () => clock,
  probe: (opts) => {
    probes.push(opts);
    return Promise.resolve(probeOk ? { ok: true, latencyMs: 2, egressIp: '10.9.9.9' } : { ok: false, latencyMs: 2 });
  },
  rolloutCounts: () => Promise.resolve({ replacing: 0, proxies: 0 }),
  // One warm instance: every sweep after the first runs on cached pages.
  sweepCache: new SweepCache(),
};
const apply = (name: string, spec: Partial<ApplyRequest['spec']> = {}): ApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name, labels: {} },
  spec: { provider: 'proc', placement: {}, port: 0, ...spec },
});

let seq = 0;
/** The simulated relay's inventory, by proxy: every report carries all of it. */
const inventory = new Map<string, InventoryItem>();
const probedAt = (at: number, i: number) => ({
  lastProbeAt: new Date(at).toISOString(),
  ok: true,
  latencyMs: 3,
  egressIp: `10.0.0.${i}`,
  consecutiveFailures: 0,
});
/** The simulated relay's report, sent at `at` on the virtual clock. */
const report = (at: number) =>
  relays.applyReport(
    {
      relay: 'sim',
      bootId: 'boot',
      seq: ++seq,
      sentAt: at,
      startedAt: base - 3_600_000,
      providers: [{ name: 'proc', type: 'process', ok: true, message: 'ok' }],
      instances: [...inventory.values()],
      results: [],
    },
    at,
  );
const inventoryReads = () => vi.spyOn(relays, 'instance');
const updateTime = async (name: string) => (await db.doc(`proxies/${name}`).get()).updateTime?.toMillis();

/**
 * A relay-backed proxy as a fleet has it after a while: Ready, its status carrying a probe newer
 * than the last change of its instance (the heartbeat after the instance appeared). The clock ends
 * 10 s after that heartbeat.
 */
async function settle(name: string, i: number, spec: Partial<ApplyRequest['spec']> = {}, createdAt = base - 60_000) {
  await proxies.apply(apply(name, spec), clock, clock);
  const doc = (await proxies.get(name))?.doc;
  if (!doc) throw new Error('not applied');
  const instance: InventoryItem = {
    name: instanceName('it', name),
    proxy: name,
    installationId: 'it',
    specHash: specHash(doc.spec, {}),
    state: 'Running',
    ip: '127.0.0.1',
    port: 20000 + i,
    createdAt,
    provider: 'proc',
    health: probedAt(clock - 1000, i),
  };
  inventory.set(name, instance);
  await report(clock);
  await runCheck(deps, { names: [name] });
  expect((await proxies.get(name))?.doc.status.phase).toBe('Ready');
  clock += 700_000;
  inventory.set(name, { ...instance, health: probedAt(clock - 1000, i) });
  await report(clock);
  await runCheck(deps, { sweep: true });
  clock += 10_000;
}

afterEach(() => vi.restoreAllMocks());

describe('sweep reads', () => {
  it('confirms a settled relay-backed proxy from its stored status: no inventory read, no write', async () => {
    await settle('s-1', 1);
    const reads = inventoryReads();
    const before = await updateTime('s-1');
    const { results } = await runCheck(deps, { sweep: true });
    expect(results).toEqual([{ name: 's-1', action: 'none', phase: 'Ready' }]);
    expect(reads).not.toHaveBeenCalled();
    expect(await updateTime('s-1')).toBe(before);
  });

  it('a warm sweep reads no unchanged proxy document, and sees one written since', async () => {
    await settle('s-4', 4);
    const pages = vi.spyOn(proxies, 'page');
    const changes = vi.spyOn(proxies, 'changes');
    const { results } = await runCheck(deps, { sweep: true });
    expect(results.map((r) => r.name)).toContain('s-4');
    expect(pages).not.toHaveBeenCalled();
    expect(changes).toHaveBeenCalledTimes(1);
    await proxies.requestDelete('s-4', clock, clock);
    const { results: after } = await runCheck(deps, { sweep: true });
    expect(after.find((r) => r.name === 's-4')?.phase).toBe('Deleting');
    expect(pages).not.toHaveBeenCalled();
  });

  it('observes an instance changed since, on the next sweep, without a kick', async () => {
    await settle('s-2', 2);
    const { health: _probed, ...settled } = inventory.get('s-2') ?? { health: undefined };
    if (!('name' in settled)) throw new Error('no instance');
    inventory.set('s-2', { ...settled, state: 'Stopped' });
    await report(clock);
    const reads = inventoryReads();
    await runCheck(deps, { sweep: true });
    expect(reads).toHaveBeenCalledWith('sim', instanceName('it', 's-2'));
    expect((await proxies.get('s-2'))?.doc.status.phase).toBe('Replacing');
    expect((await relays.command('sim', instanceName('it', 's-2')))?.kind).toBe('delete');
  });

  it('decides anything but "nothing to do" on a fresh observation: a due rotation', async () => {
    // One hour old 15 s after settling, its last probe on record 21 s old: a reusable status, a due rotation.
    await settle('s-3', 3, { maxAge: '1h' }, clock + 705_000 - 3_600_000);
    clock += 5_000;
    const reads = inventoryReads();
    await runCheck(deps, { sweep: true });
    expect(reads).toHaveBeenCalledWith('sim', instanceName('it', 's-3'));
    expect((await proxies.get('s-3'))?.doc.status.phase).toBe('Replacing');
  });

  it('reads a directly probed proxy’s credentials once per incarnation, and again after a failed probe', async () => {
    const reads = vi.spyOn(DocumentReference.prototype, 'get');
    const credentialReads = () =>
      reads.mock.contexts.filter((ref) => ref instanceof DocumentReference && ref.path === 'credentials/d-1').length;
    await proxies.apply(apply('d-1', { provider: 'direct' }), clock, clock);
    directHash = specHash({ provider: 'direct', placement: {}, port: 0 }, {});
    await runCheck(deps, { names: ['d-1'] });
    await runCheck(deps, { sweep: true });
    await runCheck(deps, { sweep: true });
    expect((await proxies.get('d-1'))?.doc.status.phase).toBe('Ready');
    expect(probes.filter((p) => p.username === 'u-d-1')).toHaveLength(3);
    expect(credentialReads()).toBe(1);
    probeOk = false;
    await runCheck(deps, { sweep: true });
    probeOk = true;
    await runCheck(deps, { sweep: true });
    expect(credentialReads()).toBe(2);

    // Deleted and applied again: a new incarnation with new credentials.
    const old = (await proxies.credentials('d-1'))?.password;
    await proxies.requestDelete('d-1', clock, clock);
    await runCheck(deps, { names: ['d-1'] });
    await runCheck(deps, { names: ['d-1'] });
    expect(await proxies.get('d-1')).toBeUndefined();
    gone.clear();
    clock += 1000;
    await proxies.apply(apply('d-1', { provider: 'direct' }), clock, clock);
    await runCheck(deps, { names: ['d-1'] });
    const renewed = (await proxies.credentials('d-1'))?.password;
    expect(renewed).not.toBe(old);
    expect(probes.at(-1)?.password).toBe(renewed);
  });
});
