/** Egress-IP verification: flags, events, and no status write for an unchanged result. */
import { describe, expect, it } from 'vitest';
import type { ProxyStatus } from '../domain/status.js';
import { egressDue, verifyEgress } from './egress.js';
import { statusChanged } from './status.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const HEARTBEAT = 600_000;
const ready = (egress?: ProxyStatus['egress']): ProxyStatus => ({
  phase: 'Ready',
  observedGeneration: 1,
  conditions: [],
  health: { ok: true, consecutiveFailures: 0, lastProbeAt: new Date(T0).toISOString(), egressIp: '10.0.0.1' },
  ...(egress ? { egress } : {}),
});
const sharing = (...names: string[]) => ({ sharingEgressIp: () => Promise.resolve(names) });

describe('verifyEgress', () => {
  it('flags a shared IP and records an event the first time', async () => {
    const out = await verifyEgress(sharing('b'), 'a', ready(), ready(), T0, HEARTBEAT);
    expect(out.status.egress).toEqual({
      ip: '10.0.0.1',
      checkedAt: new Date(T0).toISOString(),
      sharedWith: ['b'],
      confirmed: true,
    });
    expect(out.status.conditions.find((c) => c.type === 'EgressIp')?.reason).toBe('Shared');
    expect(out.event?.reason).toBe('EgressIpShared');
    expect(out.kick).toEqual(['b']);
  });

  it('an unchanged shared result is not a status change until the heartbeat (no write per check)', async () => {
    const first = (await verifyEgress(sharing('b'), 'a', ready(), ready(), T0, HEARTBEAT)).status;
    // The next check computes its status from the stored one (conditions and all), as nextStatus does.
    const again = await verifyEgress(sharing('b'), 'a', first, { ...first }, T0 + 5_000, HEARTBEAT);
    expect(again.status.egress?.checkedAt).toBe(new Date(T0).toISOString());
    expect(again.event).toBeUndefined();
    expect(again.kick).toEqual([]);
    expect(statusChanged(first, again.status, T0 + 5_000, HEARTBEAT)).toBe(false);
    const later = await verifyEgress(sharing('b'), 'a', first, { ...first }, T0 + HEARTBEAT, HEARTBEAT);
    expect(later.status.egress?.checkedAt).toBe(new Date(T0 + HEARTBEAT).toISOString());
  });

  it('a changed set of peers is recorded at once', async () => {
    const first = (await verifyEgress(sharing('b'), 'a', ready(), ready(), T0, HEARTBEAT)).status;
    const out = await verifyEgress(sharing('b', 'c'), 'a', first, ready(), T0 + 5_000, HEARTBEAT);
    expect(out.status.egress).toMatchObject({ checkedAt: new Date(T0 + 5_000).toISOString(), sharedWith: ['b', 'c'] });
    expect(out.kick).toEqual(['c']);
  });

  it('a new IP is compared once more after the document shows it, then not again, not even a heartbeat on', async () => {
    const fresh = { ...ready(), health: { ...ready().health!, egressIp: undefined } };
    const queries: string[] = [];
    const nobody = {
      sharingEgressIp: (ip: string) => {
        queries.push(ip);
        return Promise.resolve([]);
      },
    };
    const first = (await verifyEgress(nobody, 'a', fresh, ready(), T0, HEARTBEAT)).status;
    expect(first.egress).toMatchObject({ sharedWith: [], confirmed: false });
    const second = (await verifyEgress(nobody, 'a', first, { ...first }, T0 + 2_000, HEARTBEAT)).status;
    expect(second.egress).toMatchObject({ sharedWith: [], confirmed: true });
    expect(statusChanged(first, second, T0 + 2_000, HEARTBEAT)).toBe(true);
    expect(egressDue(second, { ...second })).toBe(false);
    await verifyEgress(nobody, 'a', second, { ...second }, T0 + 10 * HEARTBEAT, HEARTBEAT);
    expect(queries).toEqual(['10.0.0.1', '10.0.0.1']);
  });

  it('two proxies storing one IP at the same moment: the comparison after the stores flags both', async () => {
    // What the fleet's query finds: the documents as stored.
    const stored = new Map<string, ProxyStatus>();
    const fleet = {
      sharingEgressIp: (ip: string, except: string) =>
        Promise.resolve([...stored].filter(([n, s]) => n !== except && s.health?.egressIp === ip).map(([n]) => n)),
    };
    const fresh = { ...ready(), health: { ...ready().health!, egressIp: undefined } };
    stored.set('a', fresh).set('b', fresh);
    // Both compare before either stores: neither sees the other.
    const a1 = await verifyEgress(fleet, 'a', fresh, ready(), T0, HEARTBEAT);
    const b1 = await verifyEgress(fleet, 'b', fresh, ready(), T0, HEARTBEAT);
    expect([a1.status.egress?.sharedWith, b1.status.egress?.sharedWith]).toEqual([[], []]);
    stored.set('a', a1.status).set('b', b1.status);
    const a2 = await verifyEgress(fleet, 'a', a1.status, { ...a1.status }, T0 + 2_000, HEARTBEAT);
    expect(a2.status.egress).toMatchObject({ sharedWith: ['b'], confirmed: true });
    expect(a2.kick).toEqual(['b']);
    stored.set('a', a2.status);
    const b2 = await verifyEgress(fleet, 'b', b1.status, { ...b1.status }, T0 + 2_500, HEARTBEAT, true);
    expect(b2.status.egress).toMatchObject({ sharedWith: ['a'], confirmed: true });
  });

  it('a flagged proxy re-recording an unchanged sharing a heartbeat on kicks its peers again (a lost kick)', async () => {
    const first = (await verifyEgress(sharing('b'), 'a', ready(), ready(), T0, HEARTBEAT)).status;
    expect((await verifyEgress(sharing('b'), 'a', first, { ...first }, T0 + 5_000, HEARTBEAT)).kick).toEqual([]);
    expect((await verifyEgress(sharing('b'), 'a', first, { ...first }, T0 + HEARTBEAT, HEARTBEAT)).kick).toEqual(['b']);
  });

  it('an IP back after failed probes (the document no longer shows it) is compared again', () => {
    const settled: ProxyStatus = {
      ...ready({ ip: '10.0.0.1', checkedAt: new Date(T0).toISOString(), sharedWith: [], confirmed: true }),
    };
    expect(egressDue(settled, { ...settled })).toBe(false);
    const failed = {
      ...settled,
      health: { ok: false, consecutiveFailures: 3, lastProbeAt: new Date(T0).toISOString() },
    };
    expect(egressDue(failed, { ...settled })).toBe(true);
  });
});
