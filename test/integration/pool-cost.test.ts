/**
 * A pool's running cost on the emulators: the pool controller prices its live members (static
 * endpoints at their configured `hourlyUsd`, the control plane's share) into `status.cost`,
 * `spec.maxCostPerHour` holds members back with a condition saying what they would cost, and the
 * gateways' usage counters (duplicated, reordered, concurrent) are folded once into `status.usage`,
 * whose hours follow the Ready members.
 */
import { Timestamp } from '@google-cloud/firestore';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { PoolApplyRequest } from '../../shared/domain/pool.js';
import { demandReportSchema, type DemandReport } from '../../shared/domain/autoscale.js';
import { COLLECTIONS } from '../../shared/store/firestore/client.js';
import { demandId, USAGE_KEEP_MS } from '../../shared/store/demand-rules.js';
import { eventually } from '../support/eventually.js';
import { drivePool, readyMembers, type PoolDriver } from '../support/pool-driver.js';
import { startStaticHarness, type StaticHarness } from '../support/static-harness.js';

let h: StaticHarness;
let driver: PoolDriver | undefined;
let published = Date.now();

const apply = (replicas: number, maxCostPerHour?: number) => {
  const request: PoolApplyRequest = {
    apiVersion: 'egress.dev/v1',
    kind: 'ProxyPool',
    action: 'apply',
    metadata: { name: 'priced', labels: {} },
    spec: {
      replicas,
      minAvailable: 0,
      maxSurge: 1,
      template: { metadata: { labels: {} }, spec: { provider: 'vendor', placement: {}, port: 0 } },
      ...(maxCostPerHour !== undefined && { maxCostPerHour }),
    },
  };
  const at = (published += 1000);
  // Again when its transaction gives way under load (same request time: one apply).
  return eventually(() => h.pools.apply(request, at, Date.now()));
};

beforeAll(async () => {
  h = await startStaticHarness(
    'pool-cost',
    3,
    { releaseCooldownSeconds: 0 },
    [],
    {
      vendor: { endpoints: [0, 1, 2], hourlyUsd: 0.01 },
    },
    { usageIntervalSeconds: 1 },
  );
  driver = drivePool({ ...h.deps, pools: h.pools, demand: h.demand }, 'priced');
}, 60_000);
afterAll(async () => {
  await driver?.stop();
  await h?.close();
}, 60_000);

describe('pool cost: the controller prices the members and keeps to maxCostPerHour', () => {
  it('three static endpoints at $0.01/h: status.cost is $0.03/h and the control plane’s share', async () => {
    await apply(3);
    const cost = await eventually(
      async () => {
        const pool = await h.pools.get('priced');
        expect(readyMembers(await h.pools.members('priced'))).toBe(3);
        expect(pool?.status.cost?.lines[0]).toEqual({ what: 'vendor: static endpoint', members: 3, perHourUsd: 0.03 });
        return pool?.status.cost;
      },
      60_000,
      500,
    );
    expect(cost?.lines[1]).toMatchObject({ what: 'control plane (share)', members: 3 });
    expect(cost?.perHourUsd).toBeCloseTo(0.03 + (cost?.lines[1]?.perHourUsd ?? NaN), 12);
  }, 120_000);

  it('maxCostPerHour $0.015: one member stays, the others drain, and Progressing says CostLimited', async () => {
    await apply(3, 0.015);
    await eventually(
      async () => {
        const live = (await h.pools.members('priced')).filter((m) => !m.deletionRequestedAt);
        expect(live).toHaveLength(1);
        const pool = await h.pools.get('priced');
        expect(pool?.status.conditions.find((c) => c.type === 'Progressing')).toMatchObject({
          status: 'True',
          reason: 'CostLimited',
          message: '1 of 3 members placed: 3 would cost $0.0300/h, above maxCostPerHour $0.015/h',
        });
        expect(pool?.status.cost?.lines[0]).toEqual({ what: 'vendor: static endpoint', members: 1, perHourUsd: 0.01 });
      },
      60_000,
      500,
    );
  }, 120_000);
});

describe('pool cost: usage from the gateways, folded once', () => {
  const KIB = 1024;
  /** A gateway's reports: counters growing over two series, the second begun after the first. */
  const reports = (gateway: string, scale: number): DemandReport[] =>
    [
      [1, 1, 3],
      [2, 1, 7],
      [3, 1, 10],
      [5, 5, 2],
      [6, 5, 4],
    ].map(([sequence = 0, since = 0, requests = 0]) =>
      demandReportSchema.parse({
        gateway,
        sequence,
        inFlight: 0,
        startedPerSecond: 0,
        waiting: 0,
        usage: {
          since,
          requests: requests * scale,
          succeeded: requests * scale - 1,
          bytesIn: requests * scale * KIB,
          bytesOut: 0,
        },
      }),
    );
  // Each gateway's final counters: 10 of the first series and 4 of the second, times its scale.
  const want = { requests: 14 + 28, succeeded: 12 + 26, bytesIn: (14 + 28) * KIB, bytesOut: 0 };

  const deliver = async (all: DemandReport[]) => {
    // Two at a time: concurrent copies race in the store's transaction, as two API instances would.
    for (let i = 0; i < all.length; i += 2)
      await Promise.all(all.slice(i, i + 2).map((r) => h.demand.record('priced', r, Date.now())));
  };

  it('duplicated, reordered and concurrent reports of two gateways are counted once, and priced', async () => {
    const sent = [...reports('gw-a', 1), ...reports('gw-b', 2)];
    // Reversed (the newest first), then everything again.
    await deliver([...sent].reverse());
    await deliver(sent);
    const usage = await eventually(
      async () => {
        const u = (await h.pools.get('priced'))?.status.usage;
        expect(u?.total).toMatchObject(want);
        return u;
      },
      30_000,
      250,
    );
    expect(usage?.last24h).toMatchObject({ ...want, egressUsd: 0 });
    // The hours follow the pool's one Ready member (maxCostPerHour holds it there) and no demand.
    expect(usage?.levels).toMatchObject({ members: 1, demand: 0 });
    expect(usage?.hours.at(-1)).toMatchObject({ members: { peak: 1 }, demand: { peak: 0 } });
    // The member is a static endpoint at $0.01 an hour: instance-hours, no Internet egress billed here.
    expect(usage?.last24h.perThousandSucceededUsd).toBeGreaterThan(0);
    expect(usage?.last24h.perGibUsd).toBeGreaterThan(0);
    // Folds go on each interval; the same reports delivered again change nothing.
    await deliver(sent);
    await new Promise((r) => setTimeout(r, 2500));
    expect((await h.pools.get('priced'))?.status.usage?.total).toMatchObject(want);
  }, 120_000);

  it('keeps a gateway document two days past its demand’s expiry (the TTL field), for its counters to be folded', async () => {
    const raw = (await h.db.collection(COLLECTIONS.poolDemand).doc(demandId('priced', 'gw-a')).get()).data();
    const doc = z.object({ expireAt: z.instanceof(Timestamp), expiresAtMs: z.number() }).parse(raw);
    expect(doc.expireAt.toMillis()).toBe(doc.expiresAtMs + USAGE_KEEP_MS);
  });
});
