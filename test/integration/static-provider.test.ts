/**
 * The `static` provider on the emulators with real tinyproxies as the vendor's endpoints: claims
 * that two creates never share, endpoints resting after release, placement by label and country,
 * and proxies on it through the reconciler (probe, egress check, the endpoint's own credentials).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { instanceName } from '../../shared/domain/names.js';
import { QuotaExceededError } from '../../shared/errors.js';
import type { InstanceSpec } from '../../shared/providers/contract.js';
import { runCheck } from '../../shared/reconcile/check.js';
import { eventually } from '../support/eventually.js';
import { applyRequest, settle } from '../support/reconcile-steps.js';
import { startStaticHarness, type StaticHarness } from '../support/static-harness.js';

let h: StaticHarness;
let serial = 0;
const spec = (placement: Record<string, unknown> = {}): InstanceSpec => {
  const proxy = `s-${++serial}-${Date.now().toString(36)}`;
  return {
    name: `ep-${proxy}`,
    proxy,
    installationId: 'it',
    specHash: 'h',
    port: 0,
    placement,
    credentials: { username: 'u', password: 'p' },
  };
};
const releaseAll = async () => {
  for (const i of await h.provider.list()) await h.provider.delete(i.name);
};

beforeAll(async () => {
  h = await startStaticHarness('static-provider', 3, { releaseCooldownSeconds: 600 }, ['DE', 'DE', 'FR']);
}, 60_000);
afterAll(() => h?.close(), 60_000);
beforeEach(() => h.resetClaims());

describe('static provider: claims', () => {
  it('six concurrent creates over three endpoints: three claim one each, three are QuotaExceeded', async () => {
    const specs = Array.from({ length: 6 }, () => spec());
    const results = await Promise.allSettled(specs.map((s) => h.provider.create(s)));
    const claimed = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    const refused = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    expect(claimed).toHaveLength(3);
    expect(new Set(claimed.map((i) => i.port)).size).toBe(3);
    expect(refused).toHaveLength(3);
    for (const e of refused) {
      expect(e).toBeInstanceOf(QuotaExceededError);
      expect(String(e)).toContain('3 of 3 claimed');
    }
    // A create again adopts its claim: same endpoint, same createdAt.
    const first = claimed[0]!;
    const again = await h.provider.create(specs.find((s) => s.name === first.name)!);
    expect({ port: again.port, createdAt: again.createdAt }).toEqual({ port: first.port, createdAt: first.createdAt });
    await releaseAll();
  });

  it('a released endpoint rests (a ban cannot give it a new IP): the next create takes another, and none when all rest', async () => {
    const a = spec({ labels: { slot: '0' } });
    const claimedA = await h.provider.create(a);
    expect(claimedA.port).toBe(h.vendor.endpoints[0]?.port);
    await h.provider.delete(a.name);
    // Only endpoint 0 matches, and it rests for releaseCooldownSeconds.
    const b = spec({ labels: { slot: '0' } });
    await expect(h.provider.create(b)).rejects.toThrow(/1 resting after release until/);
    // Without the label, the create goes to an endpoint that was never released, not endpoint 0.
    const c = await h.provider.create(spec());
    expect(c.port).not.toBe(claimedA.port);
    // Endpoint 0 has rested long enough for no one here; a never-used endpoint goes first either way.
    const d = await h.provider.create(spec());
    expect([claimedA.port, c.port]).not.toContain(d.port);
    await releaseAll();
  });

  it('placement selects by country and labels; a key it does not know is refused naming it', () => {
    expect(h.provider.resolvePlacement({ country: 'FR' })).toEqual({ country: 'FR' });
    expect(h.provider.expectedCountry?.({ country: 'FR' })).toBe('FR');
    expect(h.provider.expectedCountry?.({ labels: { slot: '1' } })).toBe('DE');
    expect(() => h.provider.resolvePlacement({ country: 'US' })).toThrow(/spec\.placement: matches none of the 3/);
    expect(() => h.provider.resolvePlacement({ zone: 'x' })).toThrow(
      /spec\.placement\.zone: is not a static placement key/,
    );
  });
});

describe('static provider: through the reconciler', () => {
  it('a proxy on a static endpoint is probed with the endpoint’s credentials and Ready at its address; an endpoint that goes down is replaced by another', async () => {
    await h.proxies.apply(
      { ...applyRequest('st-1', 'vendor'), spec: { provider: 'vendor', placement: { country: 'FR' }, port: 0 } },
      Date.now(),
      Date.now(),
    );
    await settle(h.deps, 'st-1', (p) => p === 'Ready');
    const doc = (await h.proxies.get('st-1'))?.doc;
    const fr = h.vendor.endpoints[2]!;
    expect(doc?.status.address).toBe(`${fr.host}:${fr.port}`);
    expect(doc?.status.health?.ok).toBe(true);
    // What discovery hands out: the endpoint's own credentials, stored by the claim.
    expect(await h.proxies.credentials('st-1')).toEqual({ username: fr.username, password: fr.password });

    // A DE proxy, then its endpoint dies: get reports Stopped, and the proxy moves to the other DE endpoint.
    await h.proxies.apply(
      { ...applyRequest('st-2', 'vendor'), spec: { provider: 'vendor', placement: { country: 'DE' }, port: 0 } },
      Date.now(),
      Date.now(),
    );
    await settle(h.deps, 'st-2', (p) => p === 'Ready');
    const before = (await h.proxies.get('st-2'))?.doc.status.address;
    const dead = h.vendor.endpoints.find((e) => `${e.host}:${e.port}` === before)!;
    h.vendor.stop(dead.port);
    const after = await eventually(
      async () => {
        await runCheck(h.deps, { names: ['st-2'] });
        const now = (await h.proxies.get('st-2'))?.doc.status;
        expect(now?.phase).toBe('Ready');
        expect(now?.address).not.toBe(before);
        return now?.address;
      },
      30_000,
      200,
    );
    expect(after).toBe(
      `${h.vendor.endpoints[1 - h.vendor.endpoints.indexOf(dead)]?.host}:${h.vendor.endpoints[1 - h.vendor.endpoints.indexOf(dead)]?.port}`,
    );
    const claims = (await h.claims.all('vendor')).filter((c) => c.instance === instanceName('it', 'st-2'));
    expect(claims).toHaveLength(1);

    await h.proxies.requestDelete('st-1', Date.now(), Date.now());
    await h.proxies.requestDelete('st-2', Date.now(), Date.now());
    for (let i = 0; i < 5; i++) await runCheck(h.deps, { names: ['st-1', 'st-2'] });
    expect(await h.provider.list()).toEqual([]);
  });
});
