/** Egress-IP verification: flags, events, and no status write for an unchanged result. */
import { describe, expect, it } from 'vitest';
import type { ProxyStatus } from '../domain/status.js';
import { verifyEgress } from './egress.js';
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
    expect(out.status.egress).toEqual({ ip: '10.0.0.1', checkedAt: new Date(T0).toISOString(), sharedWith: ['b'] });
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
});
