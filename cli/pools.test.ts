import { describe, expect, it } from 'vitest';
import { poolSchema } from '../shared/api/schema.js';
import { describePool, formatPools, poolSettled } from './pools.js';

const NOW = Date.parse('2026-12-01T12:00:00Z');
const pool = poolSchema.parse({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  metadata: { name: 'crawl', labels: {}, generation: 2, createdAt: '2026-12-01T11:00:00Z' },
  spec: {
    replicas: 2,
    minAvailable: 1,
    maxSurge: 1,
    template: { spec: { provider: 'local' } },
    spread: [{ provider: 'local' }, { provider: 'local-b' }],
  },
  status: {
    observedGeneration: 2,
    replicas: 2,
    readyReplicas: 1,
    updatedReplicas: 2,
    entries: [
      { provider: 'local', placement: {}, desired: 2, members: 2, ready: 1, available: true },
      { provider: 'local-b', placement: {}, desired: 0, members: 0, ready: 0, available: false, message: 'relay lost' },
    ],
    conditions: [
      {
        type: 'Progressing',
        status: 'True',
        reason: 'Scaling',
        message: '1 coming up',
        lastTransitionTime: '2026-12-01T11:59:00Z',
      },
    ],
  },
  members: [
    {
      name: 'crawl-a1b2c',
      provider: 'local',
      entry: 0,
      phase: 'Ready',
      address: '127.0.0.1:20000',
      egressIp: '127.1.0.1',
      createdAt: '2026-12-01T11:00:00Z',
      draining: false,
    },
    {
      name: 'crawl-d3e4f',
      provider: 'local',
      entry: 0,
      phase: 'Provisioning',
      address: null,
      egressIp: null,
      createdAt: '2026-12-01T11:59:30Z',
      draining: false,
    },
  ],
  events: [{ at: '2026-12-01T11:59:00Z', type: 'Warning', reason: 'EntryUnavailable', message: 'local-b is out' }],
});

describe('pool output', () => {
  it('get pools: replicas, Ready, up to date, and each entry Ready over its share', () => {
    expect(formatPools([pool], 'table', NOW)).toBe(
      'NAME    REPLICAS   READY   UP-TO-DATE   SPREAD                         AGE\n' +
        'crawl   2/2        1       2            local 1/2, local-b 0/0 (out)   60m\n',
    );
  });

  it('describe pool: members under their spread entry, conditions, events', () => {
    const text = describePool(pool, NOW);
    expect(text).toContain('[0] local: 1 Ready of 2 live, share 2 (available)');
    expect(text).toContain('crawl-d3e4f   Provisioning');
    expect(text).toContain('[1] local-b: 0 Ready of 0 live, share 0 (out: relay lost)');
    expect(text).toMatch(/Progressing\s+True\s+Scaling/);
    expect(text).toMatch(/Warning\s+EntryUnavailable/);
  });

  it('a pool is settled only with every member Ready and Progressing False', () => {
    expect(poolSettled(pool, 2)).toBe(false);
    const done = {
      ...pool,
      members: pool.members.map((m) => ({ ...m, phase: 'Ready' })),
      status: { ...pool.status, conditions: [{ ...pool.status.conditions[0]!, status: 'False' }] },
    };
    expect(poolSettled(done, 2)).toBe(true);
    expect(poolSettled(done, 3)).toBe(false);
  });
});
