import { describe, expect, it } from 'vitest';
import type { ProxyStatus } from '../domain/status.js';
import { openEgressDatabase } from './database.js';
import { egressVerdict, inCountry, locateEgress } from './verify.js';

const NOW = Date.parse('2026-12-06T12:00:00Z');
const db = openEgressDatabase();

const ready = (egressIp?: string): ProxyStatus => ({
  phase: 'Ready',
  observedGeneration: 1,
  conditions: [],
  health: {
    lastProbeAt: new Date(NOW).toISOString(),
    ok: true,
    consecutiveFailures: 0,
    ...(egressIp ? { egressIp } : {}),
  },
});

describe('egress verify: the verdict', () => {
  it.each([
    ['US', { country: 'US' }, 'True', 'CountryMatches'],
    ['US', { country: 'DE' }, 'False', 'CountryMismatch'],
    ['US', { country: undefined }, 'Unknown', 'NotLocated'],
  ] as const)('expects %s, located %o: %s', (expected, where, status, reason) => {
    const verdict = egressVerdict('17.0.0.4', { asn: undefined, asnOrg: undefined, ...where }, expected);
    expect(verdict).toMatchObject({ status, reason });
  });

  it('names both countries in a mismatch', () => {
    const verdict = egressVerdict('5.9.0.9', { country: 'DE', asn: 24940, asnOrg: 'Hetzner Online GmbH' }, 'FR');
    expect(verdict.message).toBe('egress 5.9.0.9 is in DE; the placement expects FR');
  });
});

describe('egress verify: locating a status', () => {
  it('puts country, AS and organisation on health and verifies the country', () => {
    const status = locateEgress(ready('17.0.0.4'), db, 'US', NOW);
    expect(status.health).toMatchObject({ country: 'US', asn: 714, asnOrg: 'Apple Inc.' });
    expect(status.conditions).toEqual([
      expect.objectContaining({ type: 'EgressVerified', status: 'True', reason: 'CountryMatches' }),
    ]);
    expect(inCountry(status, 'US')).toBe(true);
    expect(inCountry(status, 'DE')).toBe(false);
  });

  it('flags a mismatch, which strict-country discovery leaves out', () => {
    const status = locateEgress(ready('5.9.0.9'), db, 'FR', NOW);
    expect(status.health).toMatchObject({ country: 'DE', asn: 24940 });
    expect(status.conditions[0]).toMatchObject({ type: 'EgressVerified', status: 'False' });
    expect(inCountry(status, 'DE')).toBe(false);
  });

  it('without an expected country: located, and no condition (a stale one is dropped)', () => {
    const flagged = locateEgress(ready('5.9.0.9'), db, 'FR', NOW);
    const status = locateEgress(flagged, db, undefined, NOW);
    expect(status.health).toMatchObject({ country: 'DE' });
    expect(status.conditions).toEqual([]);
    expect(inCountry(status, 'DE')).toBe(true);
  });

  it('keeps no stale location when the address moved somewhere the database does not know', () => {
    const moved = { ...locateEgress(ready('17.0.0.4'), db, 'US', NOW) };
    moved.health = { ...moved.health!, egressIp: '127.0.0.1' };
    const status = locateEgress(moved, db, 'US', NOW);
    expect(status.health).not.toHaveProperty('country');
    expect(status.health).not.toHaveProperty('asn');
    expect(status.conditions[0]).toMatchObject({ status: 'Unknown', reason: 'NotLocated' });
  });

  it('leaves a status without an egress IP alone', () => {
    const status = ready();
    expect(locateEgress(status, db, 'US', NOW)).toBe(status);
  });
});
