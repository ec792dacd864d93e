/**
 * The reconcile loop and GC end to end: the real emulators, a real relay and real proxy processes.
 * Each test applies its own proxies (any order holds). The rest of the loop (backoff, egress
 * sharing, unconfigured providers, sweeps, a catalogue edit, a silent relay) runs on the in-memory ports with a
 * ManualClock in shared/reconcile/reconcile.test.ts; the store's fences and transactions are the
 * store contract's (test/integration/store-contract.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/load.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { instanceName } from '../../shared/domain/names.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { eventually } from '../support/eventually.js';
import { applyRequest, settle as settleWith } from '../support/reconcile-steps.js';
import { proxyPorts, startRelayHarness, type RelayHarness } from '../support/relay-harness.js';

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
  // At most three proxies at once: r-1, g-1 and gc's orphan (d-1 is gone before them).
  h = await startRelayHarness('reconcile', proxyPorts(24200, 3), {
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
    rolloutCounts: (p) => h.proxies.rolloutCounts(p),
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
      'TlsPinned=True',
    ]);
    expect(doc?.status.health?.egressIp).toBe('127.0.0.1');
    expect(await h.proxies.credentials('r-1')).toMatchObject({ username: 'u-r-1' });
    const reasons = (await h.proxies.events('r-1')).map((e) => e.reason);
    expect(reasons).toEqual(expect.arrayContaining(['Provisioning', 'Ready']));
  });

  it('delete removes the instance, then the document and its credentials', async () => {
    await h.proxies.apply(apply('d-1'), Date.now(), Date.now());
    await settle('d-1', (p) => p === 'Ready');
    await h.proxies.requestDelete('d-1', Date.now(), Date.now());
    await settle('d-1', (p) => p === undefined);
    expect(await h.proxies.credentials('d-1')).toBeUndefined();
    await expect(h.registry.get('proc')?.get(instanceName('it', 'd-1'))).rejects.toThrow();
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
    await h.proxies.apply(apply('g-1'), Date.now(), Date.now());
    await settle('g-1', (p) => p === 'Ready');
    await provider.create(orphan);
    await eventually(async () => expect((await provider.get(orphan.name)).state).toBe('Running'), 20_000);
    const young = await collectGarbage(deps);
    expect(young[0]?.deleted).toEqual([]);

    const later = () => Date.now() + 120_000;
    const old = await collectGarbage({ ...deps, now: later });
    expect(old[0]?.deleted).toEqual([orphan.name]);
    await eventually(async () => expect(provider.get(orphan.name)).rejects.toThrow(), 20_000);
    expect((await h.proxies.get('g-1'))?.doc.status.phase).toBe('Ready');
    await expect(provider.get(instanceName('it', 'g-1'))).resolves.toMatchObject({ state: 'Running' });

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
