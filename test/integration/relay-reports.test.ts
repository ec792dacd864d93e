/** Relay reports on the real Firestore emulator: ordering, results from stale reports, partial listings. */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import type { InventoryItem, RelayReport } from '../../shared/relay/protocol.js';
import { createFirestore } from '../../shared/store/firestore.js';
import { RelayStore } from '../../shared/store/relays.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('reports');
const relays = new RelayStore(createFirestore(emu.projectId), createLogger({ write: () => undefined }));
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

describe('relay reports', () => {
  it('an older or duplicated report does not change the inventory', async () => {
    expect((await relays.applyReport(report('r1', 2, { instances: [item('i-a', 'a')] }), Date.now())).stale).toBe(
      false,
    );
    expect((await relays.applyReport(report('r1', 1), Date.now())).stale).toBe(true);
    expect((await relays.applyReport(report('r1', 2), Date.now())).stale).toBe(true);
    expect(await relays.instance('r1', 'i-a')).toBeDefined();
    expect((await relays.applyReport(report('r1', 3), Date.now())).changedProxies).toEqual(['a']);
    expect(await relays.instance('r1', 'i-a')).toBeUndefined();
  });

  it('a result carried by a stale report still completes its command', async () => {
    await relays.recordCommand('r2', 'i-b', {
      commandId: 'c1',
      kind: 'delete',
      issuedAt: 1,
      provider: 'p',
      proxy: 'b',
      specHash: 'h',
    });
    await relays.applyReport(report('r2', 5), Date.now());
    const late = await relays.applyReport(
      report('r2', 4, { results: [{ commandId: 'c1', provider: 'p', name: 'i-b', kind: 'delete', ok: true }] }),
      Date.now(),
    );
    expect(late).toEqual({ stale: true, changedProxies: ['b'] });
    expect((await relays.command('r2', 'i-b'))?.done).toBe(true);
  });

  it('a provider whose listing failed keeps its stored inventory', async () => {
    await relays.applyReport(report('r3', 1, { instances: [item('i-c', 'c')] }), Date.now());
    await relays.applyReport(
      report('r3', 2, { providers: [{ name: 'p', type: 'process', ok: false, message: 'inventory unavailable' }] }),
      Date.now(),
    );
    expect(await relays.instance('r3', 'i-c')).toBeDefined();
  });

  it('concurrent reports settle on the newest without lock timeouts', async () => {
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        relays.applyReport(report('r4', i + 1, { instances: [item(`i-${i + 1}`, 'd')] }), Date.now()),
      ),
    );
    expect((await relays.relay('r4'))?.seq).toBe(12);
  });

  it('an older report processed concurrently never deletes what a newer one wrote', async () => {
    for (let round = 0; round < 8; round++) {
      const relay = `race-${round}`;
      await relays.applyReport(report(relay, 1), Date.now());
      await Promise.all([
        relays.applyReport(report(relay, 3, { instances: [item('i-x', 'x')] }), Date.now()),
        relays.applyReport(report(relay, 2), Date.now()),
      ]);
      expect((await relays.relay(relay))?.seq).toBe(3);
      expect(await relays.instance(relay, 'i-x')).toBeDefined();
    }
  });
});
