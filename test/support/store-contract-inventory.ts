/**
 * Inventory reads since a mark (`RelayRepository.inventorySince`), for every relay repository: what
 * changed, what is gone, and every case where the relay document's changes cannot vouch for the
 * rest and the whole inventory is read.
 */
import { describe, expect, it } from 'vitest';
import type { InventoryItem, RelayReport } from '../../shared/wire/protocol.js';
import type { InventoryRead, RelayRepository } from '../../shared/store/ports.js';
import type { InventoryMark } from '../../shared/store/records.js';

const T = Date.UTC(2026, 5, 1);
/** The repositories' heartbeat here: changes are kept it and 5 minutes (360 s). */
const HEARTBEAT_MS = 60_000;
const KEPT_MS = HEARTBEAT_MS + 300_000;

const item = (name: string, state: InventoryItem['state'] = 'Running'): InventoryItem => ({
  name,
  proxy: name.replace(/^i-/, ''),
  provider: 'p',
  installationId: 'it',
  specHash: 'h',
  state,
  ip: '127.0.0.1',
  port: 1,
  createdAt: 1,
});

/** Reads as the contract compares them: whole or not, item names (with state), removed names. */
function summary(read: InventoryRead | undefined) {
  if (!read) return undefined;
  const items = read.items.map((i) => `${i.name}:${i.state}`).sort();
  return { full: read.full, items, removed: [...read.removed].sort() };
}

/** The relay repository's inventory-read cases of the store contract (inside `describe('store contract: <name>')`). */
export function inventoryContract(open: (heartbeatMs?: number) => Promise<RelayRepository>): void {
  describe('relay inventory since a mark', () => {
    /** A relay reporting `instances` as report `seq` (boot `b1` unless told), sent at `sentAt`. */
    const reporter = (relays: RelayRepository, relay: string) => {
      return (seq: number, sentAt: number, instances: InventoryItem[], over: Partial<RelayReport> = {}) =>
        relays.applyReport(
          {
            relay,
            bootId: 'b1',
            seq,
            sentAt,
            startedAt: 1,
            providers: [{ name: 'p', type: 'process', ok: true, message: 'ok' }],
            instances,
            results: [],
            ...over,
          },
          sentAt,
        );
    };
    /** A relay that has reported a while (its first report's `*` dropped): the mark of a whole read at `at`. */
    const settled = async (relays: RelayRepository, relay: string, at: number): Promise<InventoryMark> => {
      const report = reporter(relays, relay);
      await report(1, at - KEPT_MS - 1000, [item('i-a'), item('i-b'), item('i-c')]);
      await report(2, at, [item('i-a'), item('i-b'), item('i-c')]);
      const read = await relays.inventorySince(relay, undefined);
      expect(summary(read)).toEqual({ full: true, items: ['i-a:Running', 'i-b:Running', 'i-c:Running'], removed: [] });
      expect(read?.mark).toEqual({ bootId: 'b1', sentAt: at });
      return read?.mark ?? { bootId: '', sentAt: 0 };
    };

    it('reads the items changed since the mark and names those gone; none when nothing changed', async () => {
      const relays = await open(HEARTBEAT_MS);
      expect(await relays.inventorySince('n0', undefined)).toBeUndefined();
      const mark = await settled(relays, 'n1', T);
      expect(summary(await relays.inventorySince('n1', mark))).toEqual({ full: false, items: [], removed: [] });
      const report = reporter(relays, 'n1');
      await report(3, T + 1000, [item('i-a', 'Stopped'), item('i-b'), item('i-d')]);
      const read = await relays.inventorySince('n1', mark);
      expect(summary(read)).toEqual({ full: false, items: ['i-a:Stopped', 'i-d:Running'], removed: ['i-c'] });
      expect(read?.relay.seq).toBe(3);
      // The marked report's own changes are read once more (its items may have landed after the read).
      await report(4, T + 2000, [item('i-a', 'Stopped'), item('i-b'), item('i-d')]);
      const again = await relays.inventorySince('n1', read?.mark);
      expect(summary(again)).toEqual({ full: false, items: ['i-a:Stopped', 'i-d:Running'], removed: ['i-c'] });
      expect(summary(await relays.inventorySince('n1', again?.mark))).toEqual({ full: false, items: [], removed: [] });
    });

    it('reads whole while the first report’s "everything changed" (`*`) is kept', async () => {
      const relays = await open(HEARTBEAT_MS);
      const report = reporter(relays, 'n2');
      await report(1, T, [item('i-a')]);
      const first = await relays.inventorySince('n2', undefined);
      await report(2, T + 1000, [item('i-a')]);
      expect(summary(await relays.inventorySince('n2', first?.mark))?.full).toBe(true);
    });

    it('reads whole after the relay rebooted', async () => {
      const relays = await open(HEARTBEAT_MS);
      const mark = await settled(relays, 'n3', T);
      await reporter(relays, 'n3')(1, T + 1000, [item('i-a')], { bootId: 'b2', startedAt: T + 500 });
      expect(summary(await relays.inventorySince('n3', mark))).toEqual({
        full: true,
        items: ['i-a:Running'],
        removed: [],
      });
    });

    it('reads whole after the relay clock went back, and still when it has moved past the mark again', async () => {
      const relays = await open(HEARTBEAT_MS);
      const mark = await settled(relays, 'n4', T);
      const report = reporter(relays, 'n4');
      // Stamped before the mark: a read by changes since the mark would miss it.
      await report(3, T - 5000, [item('i-a', 'Stopped'), item('i-b'), item('i-c')]);
      expect(summary(await relays.inventorySince('n4', mark))?.full).toBe(true);
      await report(4, T + 1000, [item('i-a', 'Stopped'), item('i-b'), item('i-c')]);
      const read = await relays.inventorySince('n4', mark);
      expect(summary(read)).toMatchObject({ full: true, items: expect.arrayContaining(['i-a:Stopped']) as unknown });
    });

    it('reads whole when the mark is older than the changes the relay document keeps', async () => {
      const relays = await open(HEARTBEAT_MS);
      const mark = await settled(relays, 'n5', T);
      const report = reporter(relays, 'n5');
      await report(3, T + 1000, [item('i-a', 'Stopped'), item('i-b'), item('i-c')]);
      await report(4, T + KEPT_MS + 2000, [item('i-a', 'Stopped'), item('i-b'), item('i-c')]);
      const read = await relays.inventorySince('n5', mark);
      expect(read?.relay.changesFrom).toBeGreaterThan(mark.sentAt);
      expect(summary(read)?.full).toBe(true);
      // From a mark within what is kept, changes again.
      expect(summary(await relays.inventorySince('n5', read?.mark))?.full).toBe(false);
    });
  });
}
