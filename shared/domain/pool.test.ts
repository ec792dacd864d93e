import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import { checkPoolProviders, memberSpec, parsePoolRequest, type PoolApplyRequest } from './pool.js';

const pool = (spec: Record<string, unknown> = {}, name = 'crawl') => ({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name, labels: { team: 'crawl' } },
  spec: {
    replicas: 6,
    minAvailable: 5,
    template: { metadata: { labels: { team: 'crawl' } }, spec: { provider: 'local', placement: {}, maxAge: '24h' } },
    spread: [{ provider: 'local' }, { provider: 'local-b' }],
    ...spec,
  },
});

function fieldOf(input: unknown): string {
  try {
    parsePoolRequest(input);
  } catch (err) {
    if (err instanceof ValidationError) return `${err.field}: ${err.reason}`;
    throw err;
  }
  return 'accepted';
}

describe('parsePoolRequest', () => {
  it('accepts a two-entry pool with defaults filled in', () => {
    const parsed = parsePoolRequest(pool()) as PoolApplyRequest;
    expect(parsed.spec).toMatchObject({ replicas: 6, minAvailable: 5, maxSurge: 1 });
    expect(parsed.spec.spread?.[1]).toEqual({ provider: 'local-b', placement: {} });
  });

  it('tiers: a spread entry takes a tier and a cap', () => {
    const parsed = parsePoolRequest(
      pool({
        spread: [
          { provider: 'local', maxReplicas: 2 },
          { provider: 'vendor', tier: 1 },
        ],
      }),
    ) as PoolApplyRequest;
    expect(parsed.spec.spread).toEqual([
      { provider: 'local', placement: {}, maxReplicas: 2 },
      { provider: 'vendor', placement: {}, tier: 1 },
    ]);
  });

  it.each([
    [
      'minAvailable above replicas',
      pool({ minAvailable: 7 }),
      /^spec\.minAvailable: must be at most spec\.replicas \(6\)/,
    ],
    ['negative replicas', pool({ replicas: -1 }), /^spec\.replicas: must be at least 0/],
    ['fractional replicas', pool({ replicas: 1.5 }), /^spec\.replicas: must be an integer/],
    [
      'template not a Proxy spec',
      pool({ template: { spec: { provider: 'local', port: 70000 } } }),
      /^spec\.template\.spec\.port/,
    ],
    ['unknown template field', pool({ template: { spec: { provider: 'local' }, extra: 1 } }), /^spec\.template/],
    ['empty spread', pool({ spread: [] }), /^spec\.spread: must name at least one entry/],
    ['repeated spread entry', pool({ spread: [{ provider: 'a' }, { provider: 'a' }] }), /^spec\.spread\.1: repeats/],
    [
      'the reserved pool label in the template',
      pool({ template: { metadata: { labels: { 'egress.dev/pool': 'x' } }, spec: { provider: 'local' } } }),
      /^spec\.template\.metadata\.labels\.egress\.dev\/pool: is set by the pool/,
    ],
    ['a name too long for members', pool({}, 'a'.repeat(58)), /^metadata\.name: must be at most 57 characters/],
    [
      'one entry at two tiers',
      pool({ spread: [{ provider: 'a' }, { provider: 'a', tier: 1 }] }),
      /^spec\.spread\.1: repeats/,
    ],
    ['a negative tier', pool({ spread: [{ provider: 'a', tier: -1 }] }), /^spec\.spread\.0\.tier: must be at least 0/],
    ['a tier past 15', pool({ spread: [{ provider: 'a', tier: 16 }] }), /^spec\.spread\.0\.tier: must be at most 15/],
    [
      'a fractional cap',
      pool({ spread: [{ provider: 'a', maxReplicas: 1.5 }] }),
      /^spec\.spread\.0\.maxReplicas: must be an integer/,
    ],
  ])('%s is refused naming the field', (_what, input, want) => {
    expect(fieldOf(input)).toMatch(want);
  });

  const auto = (autoscale: Record<string, unknown>, rest: Record<string, unknown> = {}) =>
    pool({ replicas: undefined, minAvailable: undefined, autoscale, ...rest });
  const target = { inFlightPerMember: 4 };
  it.each([
    [
      'replicas and autoscale both',
      pool({ autoscale: { minReplicas: 0, maxReplicas: 3, target } }),
      /^spec\.autoscale: cannot be given with spec\.replicas/,
    ],
    [
      'neither replicas nor autoscale',
      pool({ replicas: undefined, minAvailable: undefined }),
      /^spec\.replicas: is required \(or spec\.autoscale\)/,
    ],
    [
      'min above max',
      auto({ minReplicas: 4, maxReplicas: 3, target }),
      /^spec\.autoscale\.minReplicas: must be at most spec\.autoscale\.maxReplicas \(3\)/,
    ],
    ['max 0', auto({ minReplicas: 0, maxReplicas: 0, target }), /^spec\.autoscale\.maxReplicas: must be at least 1/],
    [
      'max above the cap',
      auto({ minReplicas: 0, maxReplicas: 201, target }),
      /^spec\.autoscale\.maxReplicas: must be at most 200/,
    ],
    [
      'no target kind',
      auto({ minReplicas: 0, maxReplicas: 3, target: {} }),
      /^spec\.autoscale\.target: must give exactly one of .* \(0 given\)/,
    ],
    [
      'two target kinds',
      auto({ minReplicas: 0, maxReplicas: 3, target: { inFlightPerMember: 1, requestsPerSecondPerMember: 2 } }),
      /^spec\.autoscale\.target: must give exactly one .* \(2 given\)/,
    ],
    [
      'a zero target',
      auto({ minReplicas: 0, maxReplicas: 3, target: { inFlightPerMember: 0 } }),
      /^spec\.autoscale\.target\.inFlightPerMember: must be greater than 0/,
    ],
    [
      'an unknown target kind',
      auto({ minReplicas: 0, maxReplicas: 3, target: { cpu: 1 } }),
      /^spec\.autoscale\.target/,
    ],
    [
      'a bad duration',
      auto({ minReplicas: 0, maxReplicas: 3, target, scaleDownAfter: '2 minutes' }),
      /^spec\.autoscale\.scaleDownAfter: must be a duration/,
    ],
    [
      'a duration over a day',
      auto({ minReplicas: 0, maxReplicas: 3, target, scaleToZeroAfter: '2d' }),
      /^spec\.autoscale\.scaleToZeroAfter: must be a duration of at most 1d/,
    ],
    [
      'minAvailable above maxReplicas',
      auto({ minReplicas: 0, maxReplicas: 3, target }, { minAvailable: 4 }),
      /^spec\.minAvailable: must be at most spec\.autoscale\.maxReplicas \(3\)/,
    ],
  ])('autoscale: %s is refused naming the field', (_what, input, want) => {
    expect(fieldOf(input)).toMatch(want);
  });

  it('autoscale: a pool scaled 0–20 by demand is accepted with its windows defaulted', () => {
    const parsed = parsePoolRequest(
      auto({ minReplicas: 0, maxReplicas: 20, target, scaleDownAfter: '2m', scaleToZeroAfter: '10m' }),
    ) as PoolApplyRequest;
    expect(parsed.spec.replicas).toBeUndefined();
    expect(parsed.spec.autoscale).toEqual({
      minReplicas: 0,
      maxReplicas: 20,
      target,
      scaleUpStabilization: '0s',
      scaleDownAfter: '2m',
      scaleToZeroAfter: '10m',
    });
  });

  it('spread entries must name configured providers', () => {
    const parsed = parsePoolRequest(pool()) as PoolApplyRequest;
    expect(() => checkPoolProviders(parsed.spec, ['local'])).toThrow(
      expect.objectContaining({ field: 'spec.spread.1.provider' }),
    );
    expect(() => checkPoolProviders(parsed.spec, ['local', 'local-b'])).not.toThrow();
  });

  it('a member on another provider does not inherit the template placement', () => {
    const parsed = parsePoolRequest(
      pool({ template: { spec: { provider: 'local', placement: { bindAddress: '127.0.0.2' } } } }),
    ) as PoolApplyRequest;
    const [a, b] = parsed.spec.spread ?? [];
    expect(memberSpec(parsed.spec.template, a!).placement).toEqual({ bindAddress: '127.0.0.2' });
    expect(memberSpec(parsed.spec.template, b!).placement).toEqual({});
  });
});
