/** Compute instances as the contract sees them: state mapping, address, createdAt; the spec hash in a requestId. */
import { DEFAULT_EGRESS_POLICY } from '../../config/egress-policy.js';
import { describe, expect, it } from 'vitest';
import { RetryableError } from '../../errors.js';
import {
  instanceResource,
  requestIdFor,
  specHashOfRequestId,
  stateOf,
  toInstance,
  type GceInstance,
} from './resources.js';

const vm = (over: Partial<GceInstance> = {}): GceInstance => ({
  name: 'ep-eu-1-3f2a9c1b',
  id: '123',
  zone: 'https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a',
  status: 'RUNNING',
  creationTimestamp: '2025-07-01T10:00:00.000-07:00',
  labels: { 'egress-proxy': 'eu-1', 'egress-installation': 'prod', 'egress-spec': 'abc', 'egress-port': '3128' },
  networkInterfaces: [{ networkIP: '10.128.0.5', accessConfigs: [{ natIP: '203.0.113.7' }] }],
  ...over,
});

describe('stateOf', () => {
  it.each([
    ['PROVISIONING', 'Pending'],
    ['STAGING', 'Pending'],
    ['PENDING', 'Pending'],
    ['REPAIRING', 'Pending'],
    ['RUNNING', 'Running'],
    ['STOPPING', 'Stopped'],
    ['PENDING_STOP', 'Stopped'],
    ['STOPPED', 'Stopped'],
    ['SUSPENDING', 'Stopped'],
    ['SUSPENDED', 'Stopped'],
    ['TERMINATED', 'Terminated'],
    ['DEPROVISIONING', 'Terminated'],
  ])('%s → %s', (status, state) => {
    expect(stateOf(status)).toBe(state);
  });
});

describe('toInstance', () => {
  it('gives clients the external IP and the prober the internal one, createdAt from creationTimestamp, the rest from the labels (the TLS listener on the next port)', () => {
    expect(toInstance(vm(), 'internal')).toEqual({
      name: 'ep-eu-1-3f2a9c1b',
      proxy: 'eu-1',
      installationId: 'prod',
      specHash: 'abc',
      state: 'Running',
      ip: '203.0.113.7',
      probeIp: '10.128.0.5',
      port: 3128,
      tlsPort: 3129,
      createdAt: Date.parse('2025-07-01T17:00:00.000Z'),
    });
  });

  it('with probeVia external the prober uses the external IP too (no probeIp)', () => {
    const instance = toInstance(vm(), 'external');
    expect(instance).toMatchObject({ state: 'Running', ip: '203.0.113.7' });
    expect(instance).not.toHaveProperty('probeIp');
  });

  const missing: [string, GceInstance['networkInterfaces'], 'internal' | 'external'][] = [
    ['its external address', [{ networkIP: '10.128.0.5', accessConfigs: [{}] }], 'internal'],
    ['its external address', [{ networkIP: '10.128.0.5', accessConfigs: [{}] }], 'external'],
    ['the internal address the prober uses', [{ accessConfigs: [{ natIP: '203.0.113.7' }] }], 'internal'],
  ];
  it.each(missing)('a RUNNING VM without %s yet is Pending (probeVia %s)', (_, networkInterfaces, probeVia) => {
    const instance = toInstance(vm({ networkInterfaces }), probeVia);
    expect(instance).toMatchObject({ state: 'Pending', ip: '' });
    if (probeVia === 'internal') expect(instance.probeIp).toBe('');
  });

  it('a stopped VM shows no address', () => {
    expect(toInstance(vm({ status: 'TERMINATED' }), 'internal')).toMatchObject({
      state: 'Terminated',
      ip: '',
      probeIp: '',
    });
  });

  it('never reports a zero createdAt (rule created-at-nonzero): a VM without creationTimestamp is a Retryable error', () => {
    expect(() => toInstance(vm({ creationTimestamp: null }), 'internal')).toThrow(RetryableError);
  });
});

describe('requestIdFor', () => {
  it('is a version-4 UUID carrying a 16-hex spec hash, different on every attempt', () => {
    const a = requestIdFor('0123456789abcdef');
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(specHashOfRequestId(a)).toBe('0123456789abcdef');
    expect(requestIdFor('0123456789abcdef')).not.toBe(a);
  });

  it('for any other spec hash it is a plain random UUID that carries nothing', () => {
    for (let i = 0; i < 50; i++) expect(specHashOfRequestId(requestIdFor('contract0'))).toBeUndefined();
    expect(specHashOfRequestId('6f1c2a7e-0b3d-4c55-9d2e-7a8b9c0d1e2f')).toBeUndefined();
  });
});

describe('instanceResource: network interface', () => {
  const spec = {
    name: 'ep-eu-1-3f2a9c1b',
    proxy: 'eu-1',
    installationId: 'prod',
    specHash: 'abc',
    port: 0,
    placement: {},
    credentials: { username: 'u', password: 'p' },
  };
  const placement = {
    zone: 'us-central1-a',
    machineType: 'e2-micro',
    image: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-2404-lts-amd64',
    network: 'global/networks/default',
    tags: [],
    spot: false,
    diskSizeGb: 10,
  };
  it('a subnetwork placement sends no network (a Shared-VPC project has no default network)', () => {
    const nic = instanceResource(
      spec,
      { ...placement, subnetwork: 'projects/host/regions/us-central1/subnetworks/egress' },
      'gce',
      3128,
      DEFAULT_EGRESS_POLICY,
    ).networkInterfaces?.[0];
    expect(nic).toMatchObject({ subnetwork: 'projects/host/regions/us-central1/subnetworks/egress' });
    expect(nic).not.toHaveProperty('network');
  });
  it('without a subnetwork the network is sent', () => {
    expect(instanceResource(spec, placement, 'gce', 3128, DEFAULT_EGRESS_POLICY).networkInterfaces?.[0]).toMatchObject({
      network: 'global/networks/default',
    });
  });
});
