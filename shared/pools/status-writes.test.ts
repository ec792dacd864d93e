/**
 * A pool's reconcile writes its status only when something changed: a settled pool reconciled
 * again and again keeps its revision (the stored status comes back with its keys in another
 * order, which a plain JSON comparison took for a change: one write per reconcile).
 */
import { describe, expect, it } from 'vitest';
import { startMemoryFleet } from '../../test/support/memory-fleet.js';
import type { PoolApplyRequest } from '../domain/pool.js';
import { kickPools } from '../reconcile/kick.js';

const settled: PoolApplyRequest = {
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name: 'quiet', labels: {} },
  spec: {
    replicas: 0,
    maxSurge: 1,
    template: { metadata: { labels: {} }, spec: { provider: 'local', placement: {}, port: 0 } },
  },
};

describe('pool status writes', () => {
  it('a settled pool reconciled four more times is not written again', async () => {
    const fleet = await startMemoryFleet();
    await fleet.pools.apply(settled, fleet.clock.now(), fleet.clock.now());
    await kickPools(fleet.bus, ['quiet']);
    await fleet.bus.deliver();
    const first = (await fleet.pools.get('quiet'))?.status.revision;
    expect(first).toBeGreaterThan(0);
    for (let i = 0; i < 4; i++) {
      fleet.clock.advance(1000);
      await kickPools(fleet.bus, ['quiet']);
      await fleet.bus.deliver();
    }
    expect((await fleet.pools.get('quiet'))?.status.revision).toBe(first);
  });
});
