import { describe, expect, it } from 'vitest';
import { providerConfigSchema } from '../config/schema.js';
import { CATALOGUE } from './catalogue.js';
import { controlPlaneMonthly } from './control-plane.js';
import { memberPrice, poolCost } from './pool-cost.js';

const providers = [
  { name: 'gce', type: 'gcp', options: { project: 'my-project', zone: 'us-central1-a' } },
  { name: 'own', type: 'process', relay: 'r1' },
  { name: 'k8s', type: 'kubernetes', options: { gke: { server: 'https://203.0.113.1' }, allowUnpinnedImage: true } },
  {
    name: 'vendor',
    type: 'static',
    options: {
      endpoints: [
        { host: 'gw.example', port: 1, username: 's1', country: 'DE', hourlyUsd: 0.01 },
        { host: 'gw.example', port: 1, username: 's2', country: 'FR', hourlyUsd: 0.03 },
        { host: 'lab.example', port: 2 },
      ],
    },
  },
].map((p) => providerConfigSchema.parse(p));
const config = { providers, checkIntervalSeconds: 60 };
const hours = CATALOGUE.hoursPerMonth;

describe('pool cost: one member’s price an hour', () => {
  it('a gcp VM: its machine type in its region, its in-use IPv4 and its boot disk, from the dated catalogue', () => {
    const vm = memberPrice(providers, { provider: 'gce', placement: {} });
    const us = CATALOGUE.machineTypes.hourly['us-central1']?.['e2-micro']?.onDemand ?? NaN;
    const disk = (10 * (CATALOGUE.disks.gibMonth['us-central1']?.['pd-standard'] ?? NaN)) / hours;
    expect(vm.hourlyUsd).toBeCloseTo(us + CATALOGUE.externalIpv4.hourlyStandard + disk, 10);
    expect(vm.what).toBe('gce: VM e2-micro on-demand, us-central1 (+ IPv4, disk)');
    const spot = memberPrice(providers, { provider: 'gce', placement: { zone: 'europe-west1-b', spot: true } });
    const euSpot = CATALOGUE.machineTypes.hourly['europe-west1']?.['e2-micro']?.spot ?? NaN;
    expect(spot.hourlyUsd).toBeGreaterThan(euSpot);
    expect(spot.what).toContain('Spot, europe-west1');
  });

  it('a static endpoint: the dearest price among the endpoints its placement selects; none configured: not priced', () => {
    expect(memberPrice(providers, { provider: 'vendor', placement: {} }).hourlyUsd).toBe(0.03);
    expect(memberPrice(providers, { provider: 'vendor', placement: { country: 'DE' } }).hourlyUsd).toBe(0.01);
    expect(memberPrice(providers, { provider: 'own', placement: {} }).hourlyUsd).toBeUndefined();
    expect(memberPrice(providers, { provider: 'k8s', placement: {} })).toEqual({
      what: "k8s: Pods (billed as the cluster's nodes)",
      hourlyUsd: undefined,
    });
  });

  it('a machine type the catalogue lacks is not priced, and says why', () => {
    const odd = memberPrice(providers, { provider: 'gce', placement: { machineType: 'n2-standard-2' } });
    expect(odd.hourlyUsd).toBeUndefined();
    expect(odd.what).toMatch(/spec\.placement\.machineType: no price for machine type n2-standard-2/);
  });
});

describe('pool cost: a pool’s members an hour', () => {
  it('sums members by kind, adds the control plane’s share, and lists what is not priced', () => {
    const members = [
      { provider: 'gce', placement: {} },
      { provider: 'gce', placement: {} },
      { provider: 'vendor', placement: { country: 'DE' } },
      { provider: 'own', placement: {} },
    ];
    const cost = poolCost(config, members);
    const vm = memberPrice(providers, members[0]!).hourlyUsd ?? NaN;
    const plane = controlPlaneMonthly(3, 1, 60) / hours;
    expect(cost.lines).toEqual([
      { what: 'gce: VM e2-micro on-demand, us-central1 (+ IPv4, disk)', members: 2, perHourUsd: 2 * vm },
      { what: 'vendor: static endpoint', members: 1, perHourUsd: 0.01 },
      { what: 'control plane (share)', members: 4, perHourUsd: plane },
    ]);
    expect(cost.perHourUsd).toBeCloseTo(2 * vm + 0.01 + plane, 12);
    expect(cost.unpriced).toEqual(['1 × own: process (no price configured)']);
    expect(cost.pricesOf).toBe(CATALOGUE.recordedOn);
    expect(poolCost(config, [])).toEqual({ perHourUsd: 0, lines: [], unpriced: [], pricesOf: CATALOGUE.recordedOn });
  });
});
