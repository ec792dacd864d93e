/**
 * pool cost: usage reports through `POST /v1/pools/{name}/demand` for a fixed pool, over the
 * in-memory control plane: recorded (a fixed pool's usage counts too), folded into
 * status.usage by the pool's reconcile, once, and again only when the fold interval is due.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { startMemoryFleet, type MemoryFleet } from '../../test/support/memory-fleet.js';
import type { PoolApplyRequest } from '../domain/pool.js';
import { postDemand } from './demand.js';

let fleet: MemoryFleet;

const fixed: PoolApplyRequest = {
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name: 'fixed', labels: {} },
  spec: {
    replicas: 0,
    maxSurge: 1,
    template: { metadata: { labels: {} }, spec: { provider: 'local', placement: {}, port: 0 } },
  },
};

const report = (sequence: number, requests: number) => ({
  gateway: 'gw-a',
  sequence,
  inFlight: 0,
  startedPerSecond: 0,
  waiting: 0,
  usage: { since: 1, requests, succeeded: requests, bytesIn: requests * 1000, bytesOut: 0 },
});

beforeAll(async () => {
  fleet = await startMemoryFleet({ config: { usageIntervalSeconds: 20 } });
  await fleet.pools.apply(fixed, fleet.clock.now(), fleet.clock.now());
  await fleet.bus.deliver();
});

const post = (body: unknown) => postDemand({ ...fleet, now: () => fleet.clock.now() }, 'fixed', body);
const total = async () => (await fleet.pools.get('fixed'))?.status.usage?.total.requests;

describe('pool cost: a fixed pool’s usage through the demand route', () => {
  it('is recorded and folded at once when nothing was waiting', async () => {
    expect((await post(report(1, 5))).body).toEqual({
      accepted: true,
      name: 'fixed',
      autoscaled: false,
      applied: true,
    });
    await fleet.bus.deliver();
    expect(await total()).toBe(5);
  });

  it('is folded again only when the interval is due, and a duplicate changes nothing', async () => {
    fleet.clock.advance(10_000);
    await post(report(2, 8));
    await fleet.bus.deliver();
    expect(await total()).toBe(5);
    const published = fleet.bus.published.length;
    expect((await post(report(2, 8))).body).toMatchObject({ applied: false });
    // No kick for a duplicate.
    expect(fleet.bus.published.length).toBe(published);
    fleet.clock.advance(10_000);
    await fleet.bus.deliver();
    expect(await total()).toBe(8);
  });
});

describe('pool cost: usage from many gateways after a fold', () => {
  const from = (gateway: string, sequence: number, requests: number) => ({ ...report(sequence, requests), gateway });
  const poolKicks = () =>
    fleet.bus.published.filter((m) => {
      const data: unknown = m.data;
      return m.topic === 'proxy-checks' && typeof data === 'object' && data !== null && 'pools' in data;
    }).length;

  it('does not kick the pool once per gateway while the fold that counted looks again anyway', async () => {
    fleet.clock.advance(25_000);
    await post(from('gw-a', 3, 10));
    await fleet.bus.deliver();
    expect(await total()).toBe(10);
    const kicks = poolKicks();
    for (const [i, gw] of ['gw-b', 'gw-c', 'gw-d', 'gw-e'].entries()) await post(from(gw, 1, i + 1));
    // Each gateway's first counts arrive where none were waiting: without the due check, four kicks.
    expect(poolKicks()).toBe(kicks);
    fleet.clock.advance(20_000);
    await fleet.bus.deliver();
    expect(await total()).toBe(10 + 1 + 2 + 3 + 4);
  });
});
