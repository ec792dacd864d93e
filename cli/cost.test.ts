/** `egress cost`: the bill of the samples, errors that name the field, and the command line. */
import { describe, expect, it } from 'vitest';
import { parseCommand } from './args.js';
import { costEstimate } from './cost.js';
import type { FileIo } from './commands.js';
import { UsageError } from './command.js';

const ROOT = new URL('..', import.meta.url).pathname;

function io(files: Record<string, string> = {}): FileIo {
  return {
    cwd: ROOT,
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`no ${path}`);
      return text;
    },
  };
}

const CONFIG = 'docs/samples/config/production.yaml';

describe('egress cost: the bill', () => {
  it('prices each VM of a fleet file by machine type, region and Spot, with its address, disk and egress', () => {
    const fleet = `apiVersion: egress.dev/v1
kind: Proxy
metadata: { name: a }
spec: { provider: gce }
---
apiVersion: egress.dev/v1
kind: Proxy
metadata: { name: b }
spec: { provider: gce, placement: { catalogue: eu-spot } }
`;
    const result = costEstimate(io({ 'f.yaml': fleet }), {
      verb: 'cost',
      config: CONFIG,
      files: ['f.yaml'],
      egressGib: 100,
    });
    const line = (what: string) => result.lines.find((l) => l.what === what);
    // 730 h × $0.0083761; 730 h × $0.0028 Spot (the catalogue's figures).
    expect(line('VM e2-micro on-demand, us-central1')?.monthlyUsd).toBeCloseTo(6.1146, 3);
    expect(line('VM e2-micro Spot, europe-west1')?.monthlyUsd).toBeCloseTo(2.044, 3);
    expect(line('external IPv4 in use')?.monthlyUsd).toBeCloseTo(3.65, 6);
    expect(line('external IPv4 in use (Spot VM)')?.monthlyUsd).toBeCloseTo(1.825, 6);
    expect(line('boot disk pd-standard, us-central1')?.monthlyUsd).toBeCloseTo(0.4, 6);
    expect(line('Internet egress, Premium Tier')?.monthlyUsd).toBeCloseTo(12, 6);
    expect(result.totalUsd).toBeCloseTo(
      result.lines.reduce((s, l) => s + l.monthlyUsd, 0),
      9,
    );
  });

  it('shares a pool over its spread and puts relay-backed proxies on the bill as on-prem, control plane only', () => {
    const pool = `apiVersion: egress.dev/v1
kind: ProxyPool
metadata: { name: p }
spec:
  replicas: 5
  template: { spec: { provider: gce } }
  spread:
    - { provider: gce }
    - { provider: lab }
`;
    const result = costEstimate(io({ 'p.yaml': pool }), {
      verb: 'cost',
      config: CONFIG,
      files: ['p.yaml'],
      egressGib: 0,
    });
    expect(result.lines.find((l) => l.what.startsWith('VM '))?.quantity).toBe('3 VMs');
    expect(result.notes.join('\n')).toContain('process/kvm: 2 proxies on your own hosts: no cloud cost');
  });

  it('reads the control plane off the bench: 1,000 relay-backed proxies cost what docs/performance.md says', () => {
    const result = costEstimate(io(), {
      verb: 'cost',
      config: CONFIG,
      files: [],
      proxies: 1000,
      provider: 'lab',
      egressGib: 0,
    });
    const controlPlane = (r: typeof result) => r.lines.find((l) => l.what.startsWith('control plane'))?.monthlyUsd;
    expect(controlPlane(result)).toBeCloseTo(1.92, 6);
    const half = costEstimate(io(), {
      verb: 'cost',
      config: CONFIG,
      files: [],
      proxies: 5500,
      provider: 'lab',
      egressGib: 0,
    });
    expect(controlPlane(half)).toBeCloseTo((1.92 + 32.56) / 2, 6);
  });

  it('adds what terraform apply creates besides the proxies: the VPC connector only for providers the functions probe, the echo VM always', () => {
    const fixed = (config: string) =>
      costEstimate(io(), { verb: 'cost', config, files: [], proxies: 1, egressGib: 0 })
        .lines.filter((l) => l.what.startsWith('VPC connector') || l.what.startsWith('echo VM'))
        .map((l) => [l.what, l.quantity, l.monthlyUsd.toFixed(2)]);
    // 2 × 730 h × $0.0083761; the echo VM's hours, its address at $0.005/h and 10 GiB at $0.04.
    expect(fixed(CONFIG)).toEqual([
      ['VPC connector e2-micro, us-central1', '2 instances', '12.23'],
      ['echo VM e2-micro + address + 10 GiB pd-standard, us-central1', '1 VMs', '10.16'],
    ]);
    expect(fixed('docs/samples/config/kvm.yaml')).toEqual([
      ['echo VM e2-micro + address + 10 GiB pd-standard, us-central1', '1 VMs', '10.16'],
    ]);
  });
});

describe('egress cost: errors name the field', () => {
  it.each([
    [
      'machine type',
      '{ machineType: n2-standard-96 }',
      /spec\.placement\.machineType: no price for machine type n2-standard-96 in us-central1/,
    ],
    ['region', '{ zone: asia-east1-a }', /spec\.placement\.zone: no prices for region asia-east1/],
  ])('an unknown %s', (_what, placement, message) => {
    const fleet = `apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: { name: a }\nspec: { provider: gce, placement: ${placement} }\n`;
    expect(() =>
      costEstimate(io({ 'f.yaml': fleet }), { verb: 'cost', config: CONFIG, files: ['f.yaml'], egressGib: 0 }),
    ).toThrow(message);
  });

  it('a provider the config does not have', () => {
    const fleet = `apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: { name: a }\nspec: { provider: nope }\n`;
    expect(() =>
      costEstimate(io({ 'f.yaml': fleet }), { verb: 'cost', config: CONFIG, files: ['f.yaml'], egressGib: 0 }),
    ).toThrow(/Proxy\/a: spec.provider: provider "nope" is not in the config/);
  });
});

describe('egress cost: the command line', () => {
  it('parses the flags', () => {
    expect(parseCommand(['cost', '--config', 'c.yaml', '--proxies', '1000', '--egress-gb', '500'])).toEqual({
      verb: 'cost',
      config: 'c.yaml',
      files: [],
      proxies: 1000,
      egressGib: 500,
    });
  });
  it.each([
    [['cost', '--proxies', '3'], /missing --config/],
    [['cost', '--config', 'c', '-f', 'x', '--proxies', '3'], /one of the two/],
    [['cost', '--config', 'c', '--proxies', '3', '--egress-gb', 'lots'], /--egress-gb must be a number/],
  ])('refuses %j', (argv, message) => {
    expect(() => parseCommand(argv)).toThrow(UsageError);
    expect(() => parseCommand(argv)).toThrow(message);
  });
});
