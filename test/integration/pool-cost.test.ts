/**
 * A pool's running cost on the emulators: the pool controller prices its live members (static
 * endpoints at their configured `hourlyUsd`, the control plane's share) into `status.cost`, and
 * `spec.maxCostPerHour` holds members back with a condition saying what they would cost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolApplyRequest } from '../../shared/domain/pool.js';
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
  h = await startStaticHarness('pool-cost', 3, { releaseCooldownSeconds: 0 }, [], {
    vendor: { endpoints: [0, 1, 2], hourlyUsd: 0.01 },
  });
  driver = drivePool({ ...h.deps, pools: h.pools }, 'priced');
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
