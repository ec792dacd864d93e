/**
 * Relay reports, for every relay repository: ordering, results from stale reports, partial
 * listings, concurrent reports, and which reports read the stored inventory.
 */
import { describe, expect, it, vi } from 'vitest';
import type { InventoryItem, RelayReport } from '../../shared/wire/protocol.js';
import type { RelayRepository } from '../../shared/store/ports.js';

const T = Date.UTC(2026, 5, 1);
const item = (name: string, proxy: string): InventoryItem => ({
  name,
  proxy,
  provider: 'p',
  installationId: 'it',
  specHash: 'h',
  state: 'Running',
  ip: '127.0.0.1',
  port: 1,
  createdAt: 1,
});
const probed = (i: InventoryItem, at: number, ok = true): InventoryItem => ({
  ...i,
  health: {
    lastProbeAt: new Date(at).toISOString(),
    ok,
    latencyMs: 3,
    egressIp: `10.0.0.${i.port}`,
    consecutiveFailures: 0,
  },
});
const report = (relay: string, seq: number, over: Partial<RelayReport> = {}): RelayReport => ({
  relay,
  bootId: 'b1',
  seq,
  sentAt: seq,
  startedAt: 1,
  providers: [{ name: 'p', type: 'process', ok: true, message: 'ok' }],
  instances: [],
  results: [],
  ...over,
});

/** The relay repository's cases of the store contract (run inside `describe('store contract: <name>')`). */
export function relayContract(open: (heartbeatMs?: number) => Promise<RelayRepository>): void {
  describe('relays', () => {
    it('an older or duplicated report does not change the inventory', async () => {
      const relays = await open();
      expect((await relays.applyReport(report('r1', 2, { instances: [item('i-a', 'a')] }), T)).stale).toBe(false);
      expect((await relays.applyReport(report('r1', 1), T)).stale).toBe(true);
      expect((await relays.applyReport(report('r1', 2), T)).stale).toBe(true);
      expect(await relays.instance('r1', 'i-a')).toBeDefined();
      expect((await relays.applyReport(report('r1', 3), T)).changedProxies).toEqual(['a']);
      expect(await relays.instance('r1', 'i-a')).toBeUndefined();
    });

    it('a result carried by a stale report still completes its command', async () => {
      const relays = await open();
      await relays.recordCommand('r2', 'i-b', {
        commandId: 'c1',
        kind: 'delete',
        issuedAt: 1,
        provider: 'p',
        proxy: 'b',
        specHash: 'h',
      });
      await relays.applyReport(report('r2', 5), T);
      const late = await relays.applyReport(
        report('r2', 4, { results: [{ commandId: 'c1', provider: 'p', name: 'i-b', kind: 'delete', ok: true }] }),
        T,
      );
      expect(late).toEqual({ stale: true, changedProxies: ['b'] });
      expect((await relays.command('r2', 'i-b'))?.done).toBe(true);
    });

    it('a provider whose listing failed keeps its stored inventory', async () => {
      const relays = await open();
      await relays.applyReport(report('r3', 1, { instances: [item('i-c', 'c')] }), T);
      await relays.applyReport(
        report('r3', 2, { providers: [{ name: 'p', type: 'process', ok: false, message: 'inventory unavailable' }] }),
        T,
      );
      expect(await relays.instance('r3', 'i-c')).toBeDefined();
    });

    it('concurrent reports settle on the newest without lock timeouts', async () => {
      const relays = await open();
      await Promise.all(
        Array.from({ length: 12 }, (_, i) =>
          relays.applyReport(report('r4', i + 1, { instances: [item(`i-${i + 1}`, 'd')] }), T),
        ),
      );
      expect((await relays.relay('r4'))?.seq).toBe(12);
    });

    it('an older report processed concurrently never deletes what a newer one wrote', async () => {
      const relays = await open();
      for (let round = 0; round < 8; round++) {
        const relay = `race-${round}`;
        await relays.applyReport(report(relay, 1), T);
        await Promise.all([
          relays.applyReport(report(relay, 3, { instances: [item('i-x', 'x')] }), T),
          relays.applyReport(report(relay, 2), T),
        ]);
        expect((await relays.relay(relay))?.seq).toBe(3);
        expect(await relays.instance(relay, 'i-x')).toBeDefined();
      }
    });

    it('a report with nothing new reads no inventory and writes only the heartbeat; a change is diffed', async () => {
      const store = await open(60_000);
      const listed = vi.spyOn(store, 'instances');
      const t = T;
      const a = { ...item('i-a', 'a'), port: 1 };
      const b = { ...item('i-b', 'b'), port: 2 };
      await store.applyReport(report('q1', 1, { instances: [probed(a, t), probed(b, t)] }), t);
      expect(listed).toHaveBeenCalledTimes(1);
      const quiet = await store.applyReport(
        report('q1', 2, { instances: [probed(a, t + 900), probed(b, t + 900)] }),
        t + 1,
      );
      expect(quiet).toEqual({ stale: false, changedProxies: [] });
      expect(listed).toHaveBeenCalledTimes(1);
      expect((await store.relay('q1'))?.heartbeatAt).toBe(t + 1);
      const stopped = { ...probed(a, t + 1800), state: 'Stopped' as const };
      const moved = await store.applyReport(report('q1', 3, { instances: [stopped, probed(b, t + 1800)] }), t + 2);
      expect(moved.changedProxies).toEqual(['a']);
      expect(listed).toHaveBeenCalledTimes(2);
      expect((await store.instance('q1', 'i-a'))?.state).toBe('Stopped');
      await store.applyReport(report('q1', 4, { instances: [stopped, probed(b, t + 2700)] }), t + 3);
      expect(listed).toHaveBeenCalledTimes(2);
      // An instance gone from the listing is still noticed.
      expect((await store.applyReport(report('q1', 5, { instances: [stopped] }), t + 4)).changedProxies).toEqual(['b']);
      expect(await store.instance('q1', 'i-b')).toBeUndefined();
    });

    it('a due probe heartbeat rewrites the items half-way due with it, so they fall due together', async () => {
      const store = await open(1000);
      const listed = vi.spyOn(store, 'instances');
      const t = T;
      const a = { ...item('i-a', 'a'), port: 1 };
      const b = { ...item('i-b', 'b'), port: 2 };
      await store.applyReport(report('q2', 1, { instances: [probed(a, t), probed(b, t + 600)] }), t);
      await store.applyReport(report('q2', 2, { instances: [probed(a, t + 500), probed(b, t + 700)] }), t);
      expect(listed).toHaveBeenCalledTimes(1);
      expect((await store.instance('q2', 'i-a'))?.health?.lastProbeAt).toBe(new Date(t).toISOString());
      // a is a heartbeat old: it is rewritten, and b (half a heartbeat old) with it.
      await store.applyReport(report('q2', 3, { instances: [probed(a, t + 1100), probed(b, t + 1200)] }), t);
      expect(listed).toHaveBeenCalledTimes(2);
      expect((await store.instance('q2', 'i-a'))?.health?.lastProbeAt).toBe(new Date(t + 1100).toISOString());
      expect((await store.instance('q2', 'i-b'))?.health?.lastProbeAt).toBe(new Date(t + 1200).toISOString());
      expect((await store.relay('q2'))?.probeDueAt).toBe(t + 2100);
    });

    it('an inventory stored in several batches is read again on the next report', async () => {
      const store = await open(60_000);
      const listed = vi.spyOn(store, 'instances');
      const many = Array.from({ length: 450 }, (_, i) => item(`i-${i}`, `p-${i}`));
      await store.applyReport(report('q3', 1, { instances: many }), T);
      expect((await store.relay('q3'))?.inventoryDigest).toBeUndefined();
      await store.applyReport(report('q3', 2, { instances: many }), T);
      expect(listed).toHaveBeenCalledTimes(2);
      expect((await store.relay('q3'))?.inventoryDigest).toBeDefined();
      await store.applyReport(report('q3', 3, { instances: many }), T);
      expect(listed).toHaveBeenCalledTimes(2);
    });
  });
}
