import { describe, expect, it } from 'vitest';
import { poolSchema } from '../shared/api/schema.js';
import { poolApplySchema, type PoolSpec } from '../shared/domain/pool.js';
import type { ApiClient } from './api-client.js';
import { describePool, formatPools, poolSettled, scalePool, waitForPool } from './pools.js';

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
      'NAME    REPLICAS   READY   UP-TO-DATE   DEMAND   SPREAD                         AGE\n' +
        'crawl   2/2        1       2            <none>   local 1/2, local-b 0/0 (out)   60m\n',
    );
  });

  it('autoscale: get pools shows live over desired and the demand', () => {
    const { replicas: _r, ...fixed } = pool.spec;
    const auto = poolSchema.parse({
      ...pool,
      spec: { ...fixed, autoscale: { minReplicas: 0, maxReplicas: 10, target: { inFlightPerMember: 4 } } },
      status: {
        ...pool.status,
        desiredReplicas: 5,
        demand: { inFlight: 18, waiting: 2, startedPerSecond: 3.5, gateways: 2 },
      },
    });
    expect(formatPools([auto], 'table', NOW)).toContain(
      'crawl   2/5        1       2            18 in flight, 2 waiting, 3.5/s (2 gw)',
    );
    expect(describePool(auto, NOW)).toContain('Autoscale:     0–10, target {"inFlightPerMember":4}');
  });

  it('describe pool: members under their spread entry, conditions, events', () => {
    const text = describePool(pool, NOW);
    expect(text).toContain('[0] local: 1 Ready of 2 live, share 2 (available)');
    expect(text).toContain('crawl-d3e4f   Provisioning');
    expect(text).toContain('[1] local-b: 0 Ready of 0 live, share 0 (out: relay lost)');
    expect(text).toMatch(/Progressing\s+True\s+Scaling/);
    expect(text).toMatch(/Warning\s+EntryUnavailable/);
  });

  it('a pool is settled only with the applied spec recorded, every member Ready and Progressing False', () => {
    const want = pool.spec as Parameters<typeof poolSettled>[1];
    expect(poolSettled(pool, want)).toBe(false);
    const done = {
      ...pool,
      members: pool.members.map((m) => ({ ...m, phase: 'Ready' })),
      status: { ...pool.status, conditions: [{ ...pool.status.conditions[0]!, status: 'False' }] },
    };
    expect(poolSettled(done, want)).toBe(true);
    expect(poolSettled(done, { ...want, replicas: 3 })).toBe(false);
    // A template change not recorded yet: the pool at rest with the old spec is not what was applied.
    const changed = { ...want, template: { ...want.template, spec: { ...want.template.spec, maxAge: '23h' } } };
    expect(poolSettled(done, changed)).toBe(false);
  });
});

describe('waitForPool', () => {
  const settled = {
    ...pool,
    members: pool.members.map((m) => ({ ...m, phase: 'Ready' })),
    status: { ...pool.status, conditions: [{ ...pool.status.conditions[0]!, status: 'False' }] },
  };
  /** A client whose pool reads answer `answers` in turn (the last one from then on). */
  const client = (answers: (typeof pool | undefined)[]) => {
    let i = 0;
    return { getPool: () => Promise.resolve(answers[Math.min(i++, answers.length - 1)]) } as unknown as ApiClient;
  };
  const options = { timeoutMs: 1000, intervalMs: 1, now: Date.now };

  it('a pool not recorded yet (the apply is asynchronous) is waited for, not taken as gone', async () => {
    const lines: string[] = [];
    const out = { isTTY: false, write: (t: string) => lines.push(t) > 0 };
    await waitForPool(client([undefined, undefined, settled]), out, 'crawl', pool.spec as PoolSpec, options);
    expect(lines).toEqual([
      'pool/crawl: not recorded yet\n',
      'pool/crawl: 1 Ready, 2 members (0 draining), 2 wanted\n',
    ]);
  });

  it('times out naming the state it last saw', async () => {
    const out = { isTTY: false, write: () => true };
    await expect(
      waitForPool(client([undefined]), out, 'crawl', pool.spec as PoolSpec, { ...options, timeoutMs: 20 }),
    ).rejects.toThrow('pool/crawl: timed out: not recorded yet');
  });
});

describe('scalePool', () => {
  /** A client that answers `answer` for the pool and records what is applied. */
  const client = (answer: typeof pool) => {
    const applied: unknown[] = [];
    const api = {
      getPool: () => Promise.resolve(answer),
      applyPool: (request: unknown) => Promise.resolve(void applied.push(request)),
    } as unknown as ApiClient;
    return { api, applied };
  };

  it('applies the stored pool with the new replicas, minAvailable lowered, as the schema parses it', async () => {
    const { api, applied } = client(pool);
    const scaled = await scalePool(api, 'crawl', 0);
    expect(scaled.note).toBe('pool/crawl scaled to 0 (minAvailable lowered to 0)\n');
    expect(applied).toEqual([poolApplySchema.parse({ ...(applied[0] as object) })]);
    expect(applied[0]).toMatchObject({
      action: 'apply',
      metadata: { name: 'crawl' },
      spec: { replicas: 0, minAvailable: 0 },
    });
    expect(scaled.spec).toEqual((applied[0] as { spec: unknown }).spec);
  });

  it('refuses a stored spec the schema rejects, naming the field, and applies nothing', async () => {
    const { api, applied } = client({
      ...pool,
      spec: {
        ...pool.spec,
        spread: [
          { provider: 'local', placement: {} },
          { provider: 'local', placement: {} },
        ],
      },
    });
    await expect(scalePool(api, 'crawl', 1)).rejects.toThrow(/spec\.spread\.1.*repeats an earlier entry/);
    expect(applied).toEqual([]);
  });
});

describe('pool cost: get pools -o wide and describe pool', () => {
  const tiered = poolSchema.parse({
    ...pool,
    spec: {
      ...pool.spec,
      maxCostPerHour: 0.5,
      spread: [
        { provider: 'local', maxReplicas: 2 },
        { provider: 'vendor', tier: 1 },
      ],
    },
    status: {
      ...pool.status,
      entries: [
        { provider: 'local', placement: {}, maxReplicas: 2, desired: 2, members: 2, ready: 1, available: true },
        { provider: 'vendor', placement: {}, tier: 1, desired: 1, members: 1, ready: 1, available: true },
      ],
      cost: {
        perHourUsd: 0.0312,
        lines: [
          { what: 'vendor: static endpoint', members: 1, perHourUsd: 0.03 },
          { what: 'control plane (share)', members: 3, perHourUsd: 0.0012 },
        ],
        unpriced: ['2 × local: process (no price configured)'],
        pricesOf: '2026-12-06',
      },
    },
  });

  const GIB = 2 ** 30;
  const day = { requests: 2000, succeeded: 1000, bytesIn: 3 * GIB, bytesOut: GIB, instanceUsd: 0.75, egressUsd: 0.48 };
  const used = poolSchema.parse({
    ...tiered,
    status: {
      ...tiered.status,
      usage: {
        total: { ...day, requests: 5000, since: Date.UTC(2026, 11, 5) },
        hours: [{ hour: Date.UTC(2026, 11, 6), ...day }],
        last24h: { ...day, perGibUsd: 1.23 / 4, perThousandSucceededUsd: 1.23 },
        folded: {},
        foldedAt: Date.UTC(2026, 11, 6, 0, 30),
      },
    },
  });

  it('wide adds COST/H (+? when some members are not priced), COST/GIB and COST/1K-OK; the table stays as it was', () => {
    const wide = formatPools([tiered, used], 'wide', NOW);
    const [header, unused, measured] = wide.split('\n');
    expect(header).toMatch(/SPREAD\s+AGE\s+COST\/H\s+COST\/GIB\s+COST\/1K-OK$/);
    expect(wide).toContain('local 1/2, vendor t1 1/1');
    // No usage reported yet: no figure rather than a zero.
    expect(unused).toMatch(/\$0\.0312\+\?\s+<none>\s+<none>$/);
    expect(measured).toMatch(/\$0\.0312\+\?\s+\$0\.31\s+\$1\.23$/);
    expect(formatPools([tiered], 'table', NOW)).not.toContain('COST');
  });

  it('describe shows the last 24 h of usage with its cost per GiB and per 1,000 answered requests, and the total', () => {
    expect(describePool(tiered, NOW)).toContain('Usage:         <none> (no gateway has reported any)');
    const text = describePool(used, NOW);
    expect(text).toContain(
      'Usage (24 h):  2000 requests, 1000 answered, 3.00 GiB in, 1.00 GiB out; instances $0.75, egress $0.48',
    );
    expect(text).toContain('  per GiB: $0.31, per 1,000 answered: $1.23 (as of 2026-12-06T00:30:00.000Z)');
    expect(text).toContain('  since 2026-12-05T00:00:00.000Z: 5000 requests, 1000 answered');
  });

  it('describe shows the cost an hour by kind, what is not priced, the budget, and each entry’s tier and cap', () => {
    const text = describePool(tiered, NOW);
    expect(text).toContain('Cost:          $0.0312 an hour (prices of 2026-12-06)\n');
    expect(text).toContain('  vendor: static endpoint: 1 members, $0.0300/h');
    expect(text).toContain('  not priced: 2 × local: process (no price configured)');
    expect(text).toContain('  maxCostPerHour: $0.50');
    expect(text).toContain('[0] local (at most 2): 1 Ready of 2 live, share 2');
    expect(text).toContain('[1] vendor (tier 1): 1 Ready of 1 live, share 1');
  });
});
