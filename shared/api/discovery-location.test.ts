import { describe, expect, it } from 'vitest';
import { initialStatus, type ProxyDoc } from '../domain/status.js';
import { parseDiscoveryQuery, selectForDiscovery } from './discovery.js';

const NOW = Date.parse('2026-12-06T12:00:00Z');

function doc(
  name: string,
  country: string | undefined,
  asn: number | undefined,
  verified?: 'True' | 'False',
): ProxyDoc {
  return {
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: { name, labels: {} },
    spec: { provider: 'p', placement: {}, port: 0 },
    generation: 1,
    requestTime: 0,
    createdAt: new Date(NOW).toISOString(),
    status: {
      ...initialStatus(),
      phase: 'Ready',
      address: '10.0.0.1:3128',
      conditions: verified
        ? [{ type: 'EgressVerified', status: verified, reason: 'r', message: 'm', lastTransitionTime: 'x' }]
        : [],
      health: {
        lastProbeAt: new Date(NOW).toISOString(),
        ok: true,
        consecutiveFailures: 0,
        egressIp: '17.0.0.4',
        ...(country ? { country } : {}),
        ...(asn ? { asn } : {}),
      },
    },
  };
}

const fleet = [
  doc('us-ok', 'US', 714, 'True'),
  doc('us-unverified', 'US', 714),
  doc('us-mismatch', 'US', 15169, 'False'),
  doc('de', 'DE', 24940, 'True'),
  doc('nowhere', undefined, undefined),
];

const names = (query: string) =>
  selectForDiscovery(fleet, parseDiscoveryQuery(new URLSearchParams(query)), Math.random, NOW).map(
    (d) => d.metadata.name,
  );

describe('egress verify: discovery filters', () => {
  it.each([
    ['country=US', ['us-ok', 'us-unverified']],
    ['country=us', ['us-ok', 'us-unverified']],
    ['country=DE', ['de']],
    ['country=FR', []],
    ['asn=714', ['us-ok', 'us-unverified']],
    ['asn=15169', ['us-mismatch']],
    ['country=US&asn=15169', []],
    ['', ['de', 'nowhere', 'us-mismatch', 'us-ok', 'us-unverified']],
  ])('%s', (query, expected) => {
    expect(names(query)).toEqual(expected);
  });

  it.each([
    ['country=USA', 'country'],
    ['country=1', 'country'],
    ['country=ZZ', 'country'],
    ['asn=-1', 'asn'],
    ['asn=AS714', 'asn'],
  ])('refuses %s naming %s', (query, field) => {
    expect(() => parseDiscoveryQuery(new URLSearchParams(query))).toThrow(expect.objectContaining({ field }));
  });
});
