/**
 * The reconcile loop on the in-memory ports (test/support/memory-fleet.ts): the real check and
 * relay-report handlers, the relay-backed provider, and the relay's own command and report code
 * over an in-memory backend, on a ManualClock. Each test builds its own fleet: no order between
 * tests, no sleeps (backoffs and heartbeats pass by advancing the clock). The end-to-end loop with
 * a real relay and real proxy processes stays in test/integration/reconcile.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { selectForDiscovery } from '../api/discovery.js';
import { parseConfig } from '../config/load.js';
import type { Config } from '../config/schema.js';
import { TOPICS } from '../bus/topics.js';
import { QuotaExceededError } from '../errors.js';
import { checkProviders } from '../health.js';
import { applyRequest } from '../../test/support/reconcile-steps.js';
import { startMemoryFleet, RELAY, type MemoryFleet } from '../../test/support/memory-fleet.js';
import { runCheck } from './check.js';
import { collectGarbage } from './gc.js';
import { changedSince } from '../store/relay-rules.js';

const fleetFor = (providerOptions: Record<string, unknown> = {}) =>
  startMemoryFleet({
    config: { gcGraceSeconds: 60, backoffBaseSeconds: 30, backoffMaxSeconds: 60, unhealthyAfter: 2 },
    providerOptions,
  });

/** Records apply requests, kicks their checks and delivers until everything has settled. */
async function applied(f: MemoryFleet, names: string[], provider = 'local'): Promise<void> {
  for (const name of names) await f.proxies.apply(applyRequest(name, provider), f.clock.now(), f.clock.now());
  await runCheck(f.checkDeps, { names });
  await f.bus.deliver();
}

const phase = async (f: MemoryFleet, name: string) => (await f.proxies.get(name))?.doc.status.phase;

describe('reconcile on the in-memory ports', () => {
  it('apply → create → probe → Ready, with an address, credentials and events', async () => {
    const f = await fleetFor();
    await applied(f, ['r-1']);
    const doc = (await f.proxies.get('r-1'))?.doc;
    expect(doc?.status.phase).toBe('Ready');
    const instance = f.backend.instances.get(f.instance('r-1'));
    expect(doc?.status.address).toBe(`127.0.0.1:${instance?.port ?? -1}`);
    expect(doc?.status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
      'EgressIp=True',
      'Healthy=True',
      'Provisioned=True',
      'Ready=True',
    ]);
    expect(doc?.status.health?.egressIp).toBe('127.0.0.1');
    // The relay created the instance with the proxy's stored credentials (the probe used them).
    expect(instance?.credentials).toEqual(await f.proxies.credentials('r-1'));
    const reasons = (await f.proxies.events('r-1')).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['Provisioning', 'Ready']));
  });

  it('quota exhaustion backs off without calling create again during the backoff, and creates after it', async () => {
    const f = await fleetFor();
    let full = true;
    f.backend.fail = (op) => (op === 'create' && full ? new QuotaExceededError('no free port') : undefined);
    await applied(f, ['r-4']);
    const status = (await f.proxies.get('r-4'))?.doc.status;
    expect(status?.retry?.reason).toBe('QuotaExceeded');
    expect(status?.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({
      status: 'False',
      reason: 'QuotaExceeded',
    });
    const iname = f.instance('r-4');
    await expect(f.registry.get('local')?.get(iname)).rejects.toThrow(/not found|deleted/);
    const before = await f.relays.command(RELAY, iname);
    const creates = () => f.backend.calls.filter((c) => c.op === 'create').length;
    const tried = creates();
    for (let i = 0; i < 5; i++) await runCheck(f.checkDeps, { names: ['r-4'] });
    await f.bus.deliver();
    expect((await f.relays.command(RELAY, iname))?.commandId).toBe(before?.commandId);
    expect(creates()).toBe(tried);
    // Past the backoff (at most backoffMaxSeconds), with a port free again, the create goes out.
    full = false;
    f.clock.advance(61_000);
    await runCheck(f.checkDeps, { names: ['r-4'] });
    await f.bus.deliver();
    expect(creates()).toBe(tried + 1);
    expect(await phase(f, 'r-4')).toBe('Ready');
  });

  it('proxies sharing an egress IP are all flagged (conditions and events), and discovery can pick one per IP', async () => {
    const f = await fleetFor();
    await applied(f, ['r-1', 'r-2', 'r-3']);
    // Every instance of the in-memory backend egresses through 127.0.0.1.
    await runCheck(f.checkDeps, { names: ['r-2'], verifyEgress: true });
    expect((await f.proxies.get('r-2'))?.doc.status.egress?.sharedWith).toEqual(expect.arrayContaining(['r-1', 'r-3']));
    // What the kick to the peers does:
    await runCheck(f.checkDeps, { names: ['r-1'], verifyEgress: true });
    for (const name of ['r-1', 'r-2']) {
      const doc = (await f.proxies.get(name))?.doc;
      expect(doc?.status.conditions.find((c) => c.type === 'EgressIp')).toMatchObject({
        status: 'False',
        reason: 'Shared',
      });
      expect(doc?.status.phase).toBe('Ready');
      expect((await f.proxies.events(name)).some((e) => e.reason === 'EgressIpShared')).toBe(true);
    }
    const docs = await f.proxies.list();
    const picked = selectForDiscovery(docs, {
      labels: [],
      distinct: true,
      random: false,
      format: 'json',
      limit: 100,
      cursor: null,
    });
    expect(picked.filter((d) => d.status.health?.egressIp === '127.0.0.1')).toHaveLength(1);
  });

  it('a proxy whose provider is not configured waits, and a delete finalises it', async () => {
    const f = await fleetFor();
    await applied(f, ['r-missing'], 'nope');
    const doc = (await f.proxies.get('r-missing'))?.doc;
    expect(doc?.status.phase).toBe('Pending');
    expect(doc?.status.conditions.find((c) => c.type === 'Provisioned')?.reason).toBe('ProviderNotConfigured');
    expect(f.bus.pending(TOPICS.relayCommands)).toEqual([]);
    await f.proxies.requestDelete('r-missing', f.clock.now(), f.clock.now());
    await runCheck(f.checkDeps, { names: ['r-missing'] });
    expect(await f.proxies.get('r-missing')).toBeUndefined();
  });

  it('delete removes the instance, then the document and its credentials', async () => {
    const f = await fleetFor();
    await applied(f, ['r-3', 'r-4']);
    for (const name of ['r-3', 'r-4']) {
      expect(await phase(f, name)).toBe('Ready');
      await f.proxies.requestDelete(name, f.clock.now(), f.clock.now());
    }
    await runCheck(f.checkDeps, { names: ['r-3', 'r-4'] });
    await f.bus.deliver();
    for (const name of ['r-3', 'r-4']) {
      expect(await f.proxies.get(name)).toBeUndefined();
      expect(await f.proxies.credentials(name)).toBeUndefined();
      expect(f.backend.instances.has(f.instance(name))).toBe(false);
    }
    await expect(f.registry.get('local')?.get(f.instance('r-3'))).rejects.toThrow();
  });

  it('a sweep reconciles every proxy page by page, the next page published before this one is reconciled', async () => {
    const f = await startMemoryFleet({ config: { checkBatchSize: 2 } });
    await applied(f, ['s-1', 's-2', 's-3']);
    const first = await runCheck(f.checkDeps, { sweep: true });
    expect(first.results.map((r) => r.name)).toEqual(['s-1', 's-2']);
    const next = f.bus.pending(TOPICS.proxyChecks).map((m) => m.data);
    expect(next).toHaveLength(1);
    expect(next[0]).toMatchObject({ sweep: true, after: 's-2' });
    const second = await runCheck(f.checkDeps, { sweep: true, after: 's-2' });
    expect(second.results.map((r) => r.name)).toEqual(['s-3']);
    expect(second.results.every((r) => r.phase === 'Ready')).toBe(true);
  });
});

describe('reconcile on the in-memory ports: a catalogue edit', () => {
  /** The fleet's config with the `alt` catalogue entry of every provider replaced by `entry`. */
  const withCatalogueEntry = (config: Config, entry: Record<string, unknown>) =>
    parseConfig({ ...config, providers: config.providers.map((p) => ({ ...p, catalogue: { alt: entry } })) });

  it('leaves a Ready proxy alone while the entry is unchanged, and replaces it once the entry changes', async () => {
    const f = await startMemoryFleet({ catalogue: { alt: { bindAddress: '127.0.0.1' } } });
    const request = {
      ...applyRequest('cat-1', 'local'),
      spec: { provider: 'local', placement: { catalogue: 'alt' }, port: 0 },
    };
    await f.proxies.apply(request, f.clock.now(), f.clock.now());
    await runCheck(f.checkDeps, { names: ['cat-1'] });
    await f.bus.deliver();
    const before = (await f.proxies.get('cat-1'))?.doc;
    expect(before?.status.phase).toBe('Ready');
    const deletes = () =>
      f.bus.published.filter((m) => m.topic === TOPICS.relayCommands && m.attributes['kind'] === 'delete');
    expect(deletes()).toEqual([]);

    // The same entry, written again: same resolved placement, same hash, nothing to do.
    await runCheck(
      { ...f.checkDeps, config: withCatalogueEntry(f.config, { bindAddress: '127.0.0.1' }) },
      { names: ['cat-1'] },
    );
    expect(await phase(f, 'cat-1')).toBe('Ready');
    expect(deletes()).toEqual([]);

    // The entry edited: the request still says `catalogue: alt`, the resolved placement differs.
    await runCheck(
      { ...f.checkDeps, config: withCatalogueEntry(f.config, { bindAddress: '127.0.0.2' }) },
      { names: ['cat-1'] },
    );
    const after = (await f.proxies.get('cat-1'))?.doc;
    expect(after?.spec).toEqual(before?.spec);
    expect(after?.status.phase).toBe('Replacing');
    const ready = after?.status.conditions.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'Replacing' });
    expect(ready?.message).toMatch(/^spec changed/);
    expect(deletes()).toHaveLength(1);
  });
});

describe('reconcile on the in-memory ports: the rollout budget', () => {
  /** The fleet's config with every provider's `alt` entry and rollout budget replaced. */
  const withRollout = (config: Config, entry: Record<string, unknown>, rolloutBudget: number | string) =>
    parseConfig({
      ...config,
      providers: config.providers.map((p) => ({ ...p, catalogue: { alt: entry }, rolloutBudget })),
    });

  it.each([
    ['25%', 2],
    ['10%', 1],
    [3, 3],
  ] as const)(
    'a catalogue edit under the budget %s replaces %i of 8 proxies at once; the rest serve with the rollout pending',
    async (budget, atOnce) => {
      const f = await startMemoryFleet({ catalogue: { alt: { bindAddress: '127.0.0.1' } } });
      const names = Array.from({ length: 8 }, (_, i) => `roll-${i}`);
      for (const name of names) {
        const request = {
          ...applyRequest(name, 'local'),
          spec: { provider: 'local', placement: { catalogue: 'alt' }, port: 0 },
        };
        await f.proxies.apply(request, f.clock.now(), f.clock.now());
      }
      await runCheck(f.checkDeps, { names });
      await f.bus.deliver();
      // The deletes are held: whatever is Replacing stays so.
      f.bus.hold(TOPICS.relayCommands);
      const edited = { ...f.checkDeps, config: withRollout(f.config, { bindAddress: '127.0.0.2' }, budget) };
      for (const name of names) await runCheck(edited, { names: [name] });
      const docs = await Promise.all(names.map(async (n) => (await f.proxies.get(n))?.doc));
      expect(docs.filter((d) => d?.status.phase === 'Replacing')).toHaveLength(atOnce);
      const waiting = docs.filter((d) => d?.status.phase === 'Ready');
      expect(waiting).toHaveLength(8 - atOnce);
      for (const d of waiting)
        expect(d?.status.conditions.find((c) => c.type === 'Ready')).toMatchObject({
          status: 'True',
          reason: 'RolloutPending',
        });
    },
  );
});

describe('provider health on the in-memory ports', () => {
  it('a silent relay turns its provider Unhealthy: no create is attempted, GC deletes nothing; it recovers by itself', async () => {
    const f = await fleetFor({ heartbeatTimeoutSeconds: 1 });
    const deps = { ...f.checkDeps, providerStatus: f.providerStatus };
    await applied(f, ['r-1']);
    // The relay stops reporting; 5 s later its last heartbeat is past the 1 s timeout.
    f.bus.hold(TOPICS.relayCommands);
    f.clock.advance(5_000);
    const [down] = await checkProviders({ registry: f.registry, providerStatus: f.providerStatus, logger: f.logger });
    expect(down).toMatchObject({ name: 'local', status: 'Unhealthy' });
    await f.proxies.apply(applyRequest('r-5', 'local'), f.clock.now(), f.clock.now());
    await runCheck(deps, { names: ['r-5'] });
    expect(await f.relays.command(RELAY, f.instance('r-5'))).toBeUndefined();
    expect(f.bus.pending(TOPICS.relayCommands)).toEqual([]);
    const doc = (await f.proxies.get('r-5'))?.doc;
    expect(doc?.status.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({
      status: 'Unknown',
      reason: 'ProviderDown',
    });
    const gcDeps = { ...deps, now: () => f.clock.now() + 3_600_000 };
    expect((await collectGarbage(gcDeps))[0]?.skipped).toMatch(/down/);

    // The relay reports again: the monitor sees it healthy, and the waiting proxy is created.
    f.bus.release(TOPICS.relayCommands);
    await f.relayReport();
    await f.bus.deliver();
    const [up] = await checkProviders({ registry: f.registry, providerStatus: f.providerStatus, logger: f.logger });
    expect(up?.status).toBe('Healthy');
    await runCheck(deps, { names: ['r-5'] });
    await f.bus.deliver();
    expect(await phase(f, 'r-5')).toBe('Ready');
    expect(await phase(f, 'r-1')).toBe('Ready');
  });
});

describe('status refresh on the in-memory ports', () => {
  it('a healthy, unchanged proxy and its inventory item are rewritten once per statusRefreshSeconds, not per heartbeat', async () => {
    const f = await startMemoryFleet({ config: { heartbeatSeconds: 600, statusRefreshSeconds: 3600 } });
    await applied(f, ['r-r']);
    const start = f.clock.now();
    const written = async () => (await f.proxies.get('r-r'))?.readAt;
    const probed = async () => (await f.relays.instances(RELAY)).find((i) => i.proxy === 'r-r')?.health?.lastProbeAt;
    const docWrites: number[] = [];
    const itemWrites: number[] = [];
    let [doc, item] = [await written(), await probed()];
    // Two hours and ten minutes of one-minute cycles: a probe round with its report, then a sweep.
    for (let minute = 1; minute <= 130; minute++) {
      f.clock.advance(60_000);
      await f.probeRound();
      await f.bus.deliver();
      await runCheck(f.checkDeps, { sweep: true });
      await f.bus.deliver();
      const [d, i] = [await written(), await probed()];
      if (d !== doc) docWrites.push(minute);
      if (i !== item) itemWrites.push(minute);
      [doc, item] = [d, i];
    }
    expect(await phase(f, 'r-r')).toBe('Ready');
    // Minute 1: the first probe after the create (a change) is written to the item and the status
    // (which that check also confirms the egress IP in); then each is due an hour after that probe.
    expect(itemWrites).toEqual([1, 61, 121]);
    expect(docWrites).toEqual([1, 61, 121]);
    const lastProbe = Date.parse((await f.proxies.get('r-r'))?.doc.status.health?.lastProbeAt ?? '');
    expect(lastProbe).toBeGreaterThanOrEqual(start + 120 * 60_000);
  });

  it('after a change the item, then the status, carry a probe newer than it: sweeps rely on them again', async () => {
    const f = await startMemoryFleet({ config: { heartbeatSeconds: 600, statusRefreshSeconds: 3600 } });
    await applied(f, ['r-c']);
    const cycle = async () => {
      f.clock.advance(60_000);
      await f.probeRound();
      await f.bus.deliver();
      await runCheck(f.checkDeps, { sweep: true });
      await f.bus.deliver();
    };
    const iname = f.instance('r-c');
    // Whether the relay's record of changes lets a sweep rely on the status's probe.
    const anchored = async () => {
      const probe = Date.parse((await f.proxies.get('r-c'))?.doc.status.health?.lastProbeAt ?? '');
      return !changedSince(await f.relays.relay(RELAY))(iname, probe);
    };
    await cycle();
    expect(await anchored()).toBe(true);
    // The instance moves to another port (as after a restart): a change of the item.
    const instance = f.backend.instances.get(iname);
    if (!instance) throw new Error('no instance');
    instance.port += 1;
    await cycle();
    expect((await f.proxies.get('r-c'))?.doc.status.address).toBe(`127.0.0.1:${instance.port}`);
    // The change is recorded with the report that carried it, after its probe: not yet anchored.
    expect(await anchored()).toBe(false);
    // The next round's probe rewrites the item once; the sweep then writes the status with it.
    await cycle();
    expect(await anchored()).toBe(true);
    expect(await phase(f, 'r-c')).toBe('Ready');
  });
});
