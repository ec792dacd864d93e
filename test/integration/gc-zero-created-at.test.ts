/** GC collects an unowned instance reporting a zero `createdAt` at once, without waiting out the grace period. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { eventually } from '../support/eventually.js';
import { proxyPorts } from '../support/relay-harness.js';
import { orphanSpec } from '../guarantees/support/orphans.js';
import { INSTALLATION, PROVIDER, startWorld, type World } from '../guarantees/support/world.js';

/** Instances whose listing reports `createdAt: 0`: a provider breaking rule created-at-nonzero. */
const zeroed = new Set<string>();
let world: World;

beforeAll(async () => {
  world = await startWorld({
    relay: 'gc-zero',
    ports: proxyPorts(25700, 2),
    config: { gcGraceSeconds: 3600 },
    hooks: { list: (real) => real.map((i) => (zeroed.has(i.name) ? { ...i, createdAt: 0 } : i)) },
  });
}, 60_000);
afterAll(() => world?.close(), 60_000);

describe('gc: a zero createdAt', () => {
  it('keeps a young orphan, and collects it once its listing says createdAt 0', async () => {
    const provider = world.registry.get(PROVIDER);
    if (!provider) throw new Error('no provider');
    const orphan = orphanSpec(INSTALLATION, 'gc-zero-orphan');
    await provider.create(orphan);
    await eventually(async () => expect((await provider.get(orphan.name)).state).toBe('Running'), 20_000);

    const young = await collectGarbage(world.gcDeps());
    expect(young).toMatchObject([{ provider: PROVIDER, deleted: [] }]);
    expect(young[0]?.skipped).toBeUndefined();
    expect(young[0]?.listed).toBeGreaterThanOrEqual(1);

    // A clock one second past the epoch: no age (createdAt 0 included) passes the one-hour grace
    // period, so only the zero itself can make the instance collectable.
    zeroed.add(orphan.name);
    const zero = await collectGarbage(world.gcDeps(() => 1000));
    expect(zero).toMatchObject([{ provider: PROVIDER, deleted: [orphan.name] }]);
    await eventually(() => expect(provider.get(orphan.name)).rejects.toThrow(), 20_000);
  });
});
