/** A catalogue edit rolls the proxies that use the entry: the reconciler decides a replacement, the request unchanged. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/load.js';
import type { ApplyRequest } from '../../shared/domain/proxy.js';
import { runCheck } from '../../shared/reconcile/check.js';
import { settle } from '../support/reconcile-steps.js';
import { iname, PROVIDER, startWorld, type World } from '../guarantees/support/world.js';

let world: World;
const NAME = 'cat-1';
const request: ApplyRequest = {
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name: NAME, labels: {} },
  spec: { provider: PROVIDER, placement: { catalogue: 'alt' }, port: 0 },
};

beforeAll(async () => {
  world = await startWorld({ relay: 'catalogue', ports: [25710, 25712] });
}, 60_000);
afterAll(() => world?.close(), 60_000);

/** The world's config with the `alt` catalogue entry of the provider replaced by `entry`. */
function withCatalogueEntry(entry: Record<string, unknown>) {
  const config = world.config;
  return parseConfig({
    ...config,
    providers: config.providers.map((p) => (p.name === PROVIDER ? { ...p, catalogue: { alt: entry } } : p)),
  });
}

describe('reconcile: a catalogue edit', () => {
  it('leaves a Ready proxy alone while the entry is unchanged, and replaces it once the entry changes', async () => {
    const deps = world.checkDeps(world.bus);
    await world.proxies.apply(request, Date.now(), Date.now());
    await settle(deps, NAME, (phase) => phase === 'Ready');
    const before = (await world.snapshot(NAME)).doc;
    const deletesBefore = world.stats.deletes.get(iname(NAME)) ?? 0;

    // The same entry, written again: same resolved placement, same hash, nothing to do.
    await runCheck({ ...deps, config: withCatalogueEntry({ bindAddress: '127.0.0.1' }) }, { names: [NAME] });
    expect((await world.snapshot(NAME)).doc?.status.phase).toBe('Ready');
    expect(world.stats.deletes.get(iname(NAME)) ?? 0).toBe(deletesBefore);

    // The entry edited: the request still says `catalogue: alt`, the resolved placement differs.
    await runCheck({ ...deps, config: withCatalogueEntry({ bindAddress: '127.0.0.2' }) }, { names: [NAME] });
    const after = (await world.snapshot(NAME)).doc;
    expect(after?.spec).toEqual(before?.spec);
    expect(after?.status.phase).toBe('Replacing');
    const ready = after?.status.conditions.find((c) => c.type === 'Ready');
    expect(ready).toMatchObject({ status: 'False', reason: 'Replacing' });
    expect(ready?.message).toMatch(/^spec changed/);
    expect(world.stats.deletes.get(iname(NAME)) ?? 0).toBeGreaterThan(deletesBefore);
  });
});
