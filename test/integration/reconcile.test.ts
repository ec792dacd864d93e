/** The reconcile loop and GC on the real emulators with a real relay and real proxy processes. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/load.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { instanceName } from '../../shared/domain/names.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { selectForDiscovery } from '../../shared/api/discovery.js';
import { checkProviders } from '../../shared/health.js';
import { eventually } from '../support/eventually.js';
import { applyRequest, settle as settleWith } from '../support/reconcile-steps.js';
import { startRelayHarness, type RelayHarness } from '../support/relay-harness.js';

let h: RelayHarness;
let deps: CheckDeps;
const apply = (name: string, provider = 'proc', port = 0) => applyRequest(name, provider, port);
/**
 * The `proc` provider with a 1 s heartbeat timeout, on a clock `skewMs` ahead of the wall clock:
 * a relay that stopped reporting is silent at once, without waiting for its heartbeat to age.
 */
const silentRelay = (skewMs: number) => {
  const config = parseConfig({
    ...h.config,
    providers: [{ name: 'proc', type: 'process', relay: 'reconcile', options: { heartbeatTimeoutSeconds: 1 } }],
  });
  const registry = createRegistry({
    config,
    relays: h.relays,
    bus: h.bus,
    logger: h.logger,
    relayKeys: h.relayKeys,
    now: () => Date.now() + skewMs,
  });
  return { config, registry };
};
/** Runs checks for `name` until `until` holds of its phase. */
const settle = (name: string, until: (phase: string | undefined) => boolean, ms = 20_000) =>
  settleWith(deps, name, until, ms, 300);

beforeAll(async () => {
  h = await startRelayHarness('reconcile', [24200, 24202], {
    gcGraceSeconds: 60,
    backoffBaseSeconds: 30,
    unhealthyAfter: 2,
  });
  deps = {
    config: h.config,
    proxies: h.proxies,
    registry: h.registry,
    logger: h.logger,
    bus: h.bus,
    countReplacing: (p) => h.proxies.countReplacing(p),
  };
}, 60_000);
afterAll(() => h?.close(), 60_000);

describe('reconcile', () => {
  it('apply → create → probe → Ready, with an address, credentials and events', async () => {
    await h.proxies.apply(apply('r-1'), Date.now(), Date.now());
    await settle('r-1', (p) => p === 'Ready');
    const doc = (await h.proxies.get('r-1'))?.doc;
    expect(doc?.status.address).toMatch(/^127\.0\.0\.1:2420\d$/);
    expect(doc?.status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual([
      'EgressIp=True',
      'Healthy=True',
      'Provisioned=True',
      'Ready=True',
    ]);
    expect(doc?.status.health?.egressIp).toBe('127.0.0.1');
    const reasons = (await h.proxies.events('r-1')).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['Provisioning', 'Ready']));
  });

  it('quota exhaustion backs off without calling create again during the backoff', async () => {
    await h.proxies.apply(apply('r-2'), Date.now(), Date.now());
    await h.proxies.apply(apply('r-3'), Date.now(), Date.now());
    await settle('r-2', (p) => p === 'Ready');
    // Three ports, two taken: r-3 gets the last one, r-4 finds none.
    await settle('r-3', (p) => p === 'Ready');
    await h.proxies.apply(apply('r-4'), Date.now(), Date.now());
    await eventually(
      async () => {
        await runCheck(deps, { names: ['r-4'] });
        const s = (await h.proxies.get('r-4'))?.doc.status;
        expect(s?.retry?.reason).toBe('QuotaExceeded');
      },
      20_000,
      300,
    );
    const iname = instanceName('it', 'r-4');
    await eventually(
      async () => {
        await runCheck(deps, { names: ['r-4'] });
        await expect(h.registry.get('proc')?.get(iname)).rejects.toThrow(/not found|deleted/);
      },
      20_000,
      300,
    );
    const before = await h.relays.command('reconcile', iname);
    for (let i = 0; i < 5; i++) await runCheck(deps, { names: ['r-4'] });
    expect((await h.relays.command('reconcile', iname))?.commandId).toBe(before?.commandId);
    const doc = (await h.proxies.get('r-4'))?.doc;
    expect(doc?.status.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({
      status: 'False',
      reason: 'QuotaExceeded',
    });
  });

  it('proxies sharing an egress IP are all flagged (conditions and events), and discovery can pick one per IP', async () => {
    // r-1 was verified alone (Unique); r-2 egresses through the same 127.0.0.1.
    await runCheck(deps, { names: ['r-2'], verifyEgress: true });
    expect((await h.proxies.get('r-2'))?.doc.status.egress?.sharedWith).toEqual(expect.arrayContaining(['r-1', 'r-3']));
    // What the kick to the peers does:
    await runCheck(deps, { names: ['r-1'], verifyEgress: true });
    for (const name of ['r-1', 'r-2']) {
      const doc = (await h.proxies.get(name))?.doc;
      expect(doc?.status.conditions.find((c) => c.type === 'EgressIp')).toMatchObject({
        status: 'False',
        reason: 'Shared',
      });
      expect(doc?.status.phase).toBe('Ready');
      expect((await h.proxies.events(name)).some((e) => e.reason === 'EgressIpShared')).toBe(true);
    }
    const docs = await h.proxies.list();
    const picked = selectForDiscovery(docs, { labels: [], distinct: true, random: false, format: 'json' });
    expect(picked.filter((d) => d.status.health?.egressIp === '127.0.0.1')).toHaveLength(1);
  });

  it('a proxy whose provider is not configured waits, and a delete finalises it', async () => {
    await h.proxies.apply(apply('r-missing', 'nope'), Date.now(), Date.now());
    await runCheck(deps, { names: ['r-missing'] });
    const doc = (await h.proxies.get('r-missing'))?.doc;
    expect(doc?.status.phase).toBe('Pending');
    expect(doc?.status.conditions.find((c) => c.type === 'Provisioned')?.reason).toBe('ProviderNotConfigured');
    await h.proxies.requestDelete('r-missing', Date.now(), Date.now());
    await runCheck(deps, { names: ['r-missing'] });
    expect(await h.proxies.get('r-missing')).toBeUndefined();
  });

  it('delete removes the instance, then the document and its credentials', async () => {
    await h.proxies.requestDelete('r-4', Date.now(), Date.now());
    await h.proxies.requestDelete('r-3', Date.now(), Date.now());
    for (const name of ['r-3', 'r-4']) {
      await eventually(
        async () => {
          await runCheck(deps, { names: [name] });
          expect(await h.proxies.get(name)).toBeUndefined();
        },
        20_000,
        300,
      );
      expect(await h.proxies.credentials(name)).toBeUndefined();
    }
    await expect(h.registry.get('proc')?.get(instanceName('it', 'r-3'))).rejects.toThrow();
  });

  it('a sweep reconciles every proxy page by page', async () => {
    const results = await runCheck(deps, { sweep: true });
    expect(results.results.map((r) => r.name).sort()).toEqual(['r-1', 'r-2']);
  });
});

describe('gc', () => {
  it('collects an unowned instance past the grace period, keeps owned and young ones, and skips a silent relay', async () => {
    const provider = h.registry.get('proc');
    if (!provider) throw new Error('no provider');
    const orphan = {
      name: 'ep-orphan-1',
      proxy: 'orphan',
      installationId: 'it',
      specHash: 'x',
      port: 0,
      placement: {},
      credentials: { username: 'u', password: 'p' },
    };
    await provider.create(orphan);
    await eventually(async () => expect((await provider.get(orphan.name)).state).toBe('Running'), 20_000);
    const young = await collectGarbage(deps);
    expect(young[0]?.deleted).toEqual([]);

    const later = () => Date.now() + 120_000;
    const old = await collectGarbage({ ...deps, now: later });
    expect(old[0]?.deleted).toEqual([orphan.name]);
    await eventually(async () => expect(provider.get(orphan.name)).rejects.toThrow(), 20_000);
    expect((await h.proxies.get('r-1'))?.doc.status.phase).toBe('Ready');

    // A relay that stopped reporting: with a 1 s heartbeat timeout, and the providers' clock 5 s
    // past its last heartbeat, its listing is not trusted.
    await h.agent.stop();
    try {
      const { config, registry } = silentRelay(5_000);
      const silent = await collectGarbage({ ...deps, config, registry, now: () => Date.now() + 3_600_000 });
      expect(silent[0]?.skipped).toMatch(/relay/);
      expect(silent[0]?.deleted).toEqual([]);
    } finally {
      await h.agent.start();
    }
  });
});

describe('provider health', () => {
  it('a silent relay turns its provider Unhealthy: no create is attempted, GC deletes nothing; it recovers by itself', async () => {
    await h.agent.stop();
    const stoppedAt = Date.now();
    // With a 1 s heartbeat timeout and the providers' clock 5 s ahead, the monitor sees it silent.
    const skewed = silentRelay(5_000);
    const monitored = { ...deps, config: skewed.config, registry: skewed.registry, providerStatus: h.providerStatus };
    const [down] = await checkProviders({
      registry: skewed.registry,
      providerStatus: h.providerStatus,
      logger: h.logger,
    });
    expect(down).toMatchObject({ name: 'proc', status: 'Unhealthy' });
    await h.proxies.apply(apply('r-5'), Date.now(), Date.now());
    await runCheck(monitored, { names: ['r-5'] });
    expect(await h.relays.command('reconcile', instanceName('it', 'r-5'))).toBeUndefined();
    const doc = (await h.proxies.get('r-5'))?.doc;
    expect(doc?.status.conditions.find((c) => c.type === 'Provisioned')).toMatchObject({
      status: 'Unknown',
      reason: 'ProviderDown',
    });
    expect((await collectGarbage({ ...monitored, now: () => Date.now() + 3_600_000 }))[0]?.skipped).toMatch(/down/);

    await h.agent.start();
    // Back on the real clock once the relay has reported since it stopped.
    const { registry } = silentRelay(0);
    const recovered = { ...monitored, registry };
    await eventually(
      async () => {
        expect((await h.relays.relay('reconcile'))?.heartbeatAt, 'a heartbeat since the stop').toBeGreaterThan(
          stoppedAt,
        );
        const [up] = await checkProviders({ registry, providerStatus: h.providerStatus, logger: h.logger });
        expect(up?.status).toBe('Healthy');
      },
      20_000,
      500,
    );
    await eventually(
      async () => {
        await runCheck(recovered, { names: ['r-5'] });
        expect((await h.proxies.get('r-5'))?.doc.status.phase).toBe('Ready');
      },
      30_000,
      300,
    );
  });
});
