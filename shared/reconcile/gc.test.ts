/**
 * GC on the in-memory stores with a ManualClock: the relay's inventory arrives as a relay report
 * would store it, the relay-backed provider issues its delete commands on a bus that keeps them.
 * The end-to-end GC (a real relay deleting real processes) stays in test/integration/reconcile.test.ts.
 */
import { describe, expect, it, vi } from 'vitest';
import type { Bus } from '../bus/pubsub.js';
import { parseConfig } from '../config/load.js';
import { instanceName } from '../domain/names.js';
import { createLogger } from '../logger.js';
import { createRegistry } from '../providers/registry.js';
import type { InventoryItem } from '../wire/protocol.js';
import { ManualClock } from '../store/clock.js';
import { MemoryProxyRepository } from '../store/memory/proxies.js';
import { MemoryRelayRepository } from '../store/memory/relays.js';
import { MemoryState } from '../store/memory/state.js';
import { collectGarbage } from './gc.js';
import { InventoryCache } from './gc-inventory.js';
import { SweepCache } from './sweep-cache.js';

const logger = createLogger({ write: () => undefined });
const HOUR = 3_600_000;

/** A published message, as the bus keeps it. */
interface Sent {
  topic: string;
  data: unknown;
}

function world() {
  const clock = new ManualClock();
  const state = new MemoryState(clock);
  const proxies = new MemoryProxyRepository(clock, state);
  const relays = new MemoryRelayRepository(clock, 300_000, state);
  const sent: Sent[] = [];
  const bus: Bus = {
    publish: (topic, data) => {
      sent.push({ topic, data });
      return Promise.resolve(`m-${sent.length}`);
    },
  };
  const config = parseConfig({
    installationId: 'it',
    echoUrl: 'http://127.0.0.1:1/',
    gcGraceSeconds: 60,
    providers: [{ name: 'proc', type: 'process', relay: 'r1', options: { heartbeatTimeoutSeconds: 30 } }],
  });
  const registry = createRegistry({ config, relays, bus, logger, now: () => clock.now() });
  const deps = { config, proxies, registry, logger, now: () => clock.now() };
  let seq = 0;
  /** The relay reports `items` now. */
  const report = (items: InventoryItem[]) =>
    relays.applyReport(
      {
        relay: 'r1',
        bootId: 'b',
        seq: ++seq,
        sentAt: clock.now(),
        startedAt: 1,
        providers: [{ name: 'proc', type: 'process', ok: true, message: 'ok' }],
        instances: items,
        results: [],
      },
      clock.now(),
    );
  return { clock, proxies, relays, sent, deps, registry, report };
}

/**
 * A world whose relay has reported for a while: its first report's "everything changed" (`*`)
 * has been dropped (a heartbeat and 5 minutes later), so inventory reads can go by its changes.
 */
async function reportingWorld() {
  const w = world();
  await w.report([]);
  w.clock.advance(11 * 60_000);
  return w;
}

const item = (proxy: string, createdAt: number, installationId = 'it'): InventoryItem => ({
  name: instanceName(installationId, proxy),
  proxy,
  provider: 'proc',
  installationId,
  specHash: 'h',
  state: 'Running',
  ip: '127.0.0.1',
  port: 1,
  createdAt,
});

describe('gc on the in-memory stores', () => {
  it('collects an unowned instance past the grace period; keeps owned, young and foreign ones', async () => {
    const w = world();
    const t = w.clock.now();
    await w.proxies.apply(
      {
        apiVersion: 'egress.dev/v1',
        kind: 'Proxy',
        action: 'apply',
        metadata: { name: 'owned', labels: {} },
        spec: { provider: 'proc', placement: {}, port: 0 },
      },
      t,
      t,
    );
    w.clock.advance(120_000);
    await w.report([item('owned', t), item('orphan', t), item('young', w.clock.now()), item('theirs', t, 'other')]);
    const [gc] = await collectGarbage(w.deps);
    expect(gc).toMatchObject({ provider: 'proc', listed: 3, deleted: [instanceName('it', 'orphan')] });
    expect(gc?.skipped).toBeUndefined();
    expect(await w.relays.command('r1', instanceName('it', 'orphan'))).toMatchObject({ kind: 'delete', done: false });
    expect(w.sent).toHaveLength(1);
  });

  it('collects an instance whose listing says createdAt 0 at once, whatever the grace period', async () => {
    const w = world();
    await w.report([item('zero', 0), item('fresh', w.clock.now())]);
    // GC's clock one second past the epoch: no age (createdAt 0 included) passes the grace period,
    // so only the zero itself can make the instance collectable.
    const [gc] = await collectGarbage({ ...w.deps, now: () => 1000 });
    expect(gc?.deleted).toEqual([instanceName('it', 'zero')]);
  });

  it('with an owner cache: a proxy created since the last pass owns its instance; a finalised one stops owning', async () => {
    const w = world();
    const owners = new SweepCache(w.clock);
    const deps = { ...w.deps, owners };
    const apply = (name: string) =>
      w.proxies.apply(
        {
          apiVersion: 'egress.dev/v1',
          kind: 'Proxy',
          action: 'apply',
          metadata: { name, labels: {} },
          spec: { provider: 'proc', placement: {}, port: 0 },
        },
        w.clock.now(),
        w.clock.now(),
      );
    const t = w.clock.now();
    await apply('a');
    await collectGarbage(deps);
    w.clock.advance(1000);
    await apply('b');
    w.clock.advance(120_000);
    await w.report([item('a', t), item('b', t)]);
    const names = vi.spyOn(w.proxies, 'names');
    expect((await collectGarbage(deps))[0]?.deleted).toEqual([]);
    expect(names).not.toHaveBeenCalled();
    await w.proxies.requestDelete('b', w.clock.now(), w.clock.now());
    await w.proxies.finalise('b', 2);
    w.clock.advance(1000);
    expect((await collectGarbage(deps))[0]?.deleted).toEqual([instanceName('it', 'b')]);
  });

  it('skips a relay that stopped reporting: its listing is not trusted', async () => {
    const w = world();
    const t = w.clock.now();
    await w.report([item('orphan', t)]);
    w.clock.advance(HOUR);
    const [gc] = await collectGarbage(w.deps);
    expect(gc?.skipped).toMatch(/relay/);
    expect(gc?.deleted).toEqual([]);
    expect(w.sent).toEqual([]);
  });

  it('with an inventory cache: a warm pass reads only the changed items, and the whole inventory hourly', async () => {
    const w = await reportingWorld();
    const deps = { ...w.deps, inventory: new InventoryCache(w.clock) };
    /** Whether each pass so far read the whole inventory. */
    const whole: (boolean | undefined)[] = [];
    const inventorySince = w.relays.inventorySince.bind(w.relays);
    vi.spyOn(w.relays, 'inventorySince').mockImplementation(async (relay, since) => {
      const read = await inventorySince(relay, since);
      whole.push(read?.full);
      return read;
    });
    const get = vi.spyOn(w.relays, 'instanceAndCommand');
    await w.report([item('kept', 0, 'other')]);
    expect((await collectGarbage(deps))[0]).toMatchObject({ listed: 0, deleted: [] });
    const t = w.clock.now();
    w.clock.advance(120_000);
    await w.report([item('kept', 0, 'other'), item('orphan', t)]);
    // The orphan came with the changed items (read now): deleted without a re-read.
    expect((await collectGarbage(deps))[0]).toMatchObject({ listed: 1, deleted: [instanceName('it', 'orphan')] });
    expect(get).not.toHaveBeenCalled();
    w.clock.advance(HOUR);
    await w.report([item('kept', 0, 'other'), item('orphan', t)]);
    await collectGarbage(deps);
    expect(whole).toEqual([true, false, true]);
  });

  it('with an inventory cache: an instance known only from the cached copy is read again before a delete', async () => {
    const w = await reportingWorld();
    const [relayed] = w.registry.all();
    if (!relayed?.listSince) throw new Error('the relay-backed provider lists what changed');
    // A delta that misses removals (as a provider breaking rule list-since-vouch would): the cached copy goes stale.
    const lagging = {
      ...relayed,
      listSince: async (c: string | undefined) => ({ ...(await relayed.listSince!(c)), removed: [] }),
    };
    const registry = { ...w.registry, all: () => [lagging] };
    const deps = { ...w.deps, registry, inventory: new InventoryCache(w.clock) };
    const t = w.clock.now();
    await w.report([item('gone', t), item('still', t)]);
    w.clock.advance(1000);
    // A report that changes nothing: the pass's mark is past the items' last change.
    await w.report([item('gone', t), item('still', t)]);
    // Both young at the first pass: kept, and cached.
    expect((await collectGarbage(deps))[0]?.deleted).toEqual([]);
    w.clock.advance(120_000);
    await w.report([item('still', t)]);
    const get = vi.spyOn(w.relays, 'instanceAndCommand');
    // Both now past the grace period in the cached copy: each is read again, and only the one still there is deleted.
    expect((await collectGarbage(deps))[0]).toMatchObject({ listed: 2, deleted: [instanceName('it', 'still')] });
    expect(get.mock.calls.map(([, name]) => name).sort()).toEqual([
      instanceName('it', 'gone'),
      instanceName('it', 'still'),
    ]);
    expect(w.sent.map((m) => (m.data as { name?: string }).name)).toEqual([instanceName('it', 'still')]);
  });
});
