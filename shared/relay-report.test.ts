/**
 * The relay-report handler on the in-memory stores: the proxies a report changed are checked in
 * its own invocation (a few), kicked to `check` (more, or when the check fails).
 */
import { describe, expect, it } from 'vitest';
import { decodeBody } from './bus/message.js';
import type { Bus } from './bus/pubsub.js';
import { parseConfig } from './config/load.js';
import { instanceName } from './domain/names.js';
import { createLogger } from './logger.js';
import type { InventoryItem } from './wire/protocol.js';
import { CHECKED_IN_REPORT, handleRelayReport, type RelayReportDeps } from './relay-report.js';
import { ManualClock } from './store/clock.js';
import { MemoryRelayRepository } from './store/memory/relays.js';
import { MemoryState } from './store/memory/state.js';

const logger = createLogger({ write: () => undefined });

function world(check?: (names: string[]) => Promise<unknown>, unsigned = true) {
  const clock = new ManualClock();
  const relays = new MemoryRelayRepository(clock, 300_000, new MemoryState(clock));
  const kicked: string[][] = [];
  const bus: Bus = {
    publish: (_topic, data) => {
      kicked.push((data as { names: string[] }).names);
      return Promise.resolve(String(kicked.length));
    },
  };
  const config = parseConfig({
    installationId: 'it',
    echoUrl: 'http://127.0.0.1:1/',
    providers: [{ name: 'proc', type: 'process', relay: 'r1' }],
  });
  const deps: RelayReportDeps = {
    config,
    relays,
    bus,
    logger,
    now: () => clock.now(),
    allowUnsignedRelays: unsigned,
    ...(check ? { check } : {}),
  };
  let seq = 0;
  const report = (proxies: string[]) => {
    const instances: InventoryItem[] = proxies.map((proxy) => ({
      name: instanceName('it', proxy),
      proxy,
      provider: 'proc',
      installationId: 'it',
      specHash: 'h',
      state: 'Running',
      ip: '127.0.0.1',
      port: 1,
      createdAt: 1,
    }));
    const body = {
      relay: 'r1',
      bootId: 'b',
      seq: ++seq,
      sentAt: clock.now(),
      startedAt: 1,
      providers: [{ name: 'proc', type: 'process', ok: true, message: 'ok' }],
      instances,
      results: [],
    };
    return handleRelayReport(deps, decodeBody(`m-${seq}`, clock.now(), { relay: 'r1' }, JSON.stringify(body)));
  };
  return { kicked, report };
}

const names = (n: number) => Array.from({ length: n }, (_, i) => `p-${i}`);

describe('relay report: what it changed is checked', () => {
  it('in this invocation, when there are few', async () => {
    const checked: string[][] = [];
    const w = world((n) => Promise.resolve(void checked.push(n)));
    expect(await w.report(names(3))).toBe('applied');
    expect(checked).toEqual([names(3)]);
    expect(w.kicked).toEqual([]);
  });

  it('by the check function, when there are more than it checks itself', async () => {
    const checked: string[][] = [];
    const w = world((n) => Promise.resolve(void checked.push(n)));
    await w.report(names(CHECKED_IN_REPORT + 1));
    expect(checked).toEqual([]);
    expect(w.kicked.flat().sort()).toEqual(names(CHECKED_IN_REPORT + 1).sort());
  });

  it('by the check function, when the check here fails (the report stays applied)', async () => {
    const w = world(() => Promise.reject(new Error('firestore unavailable')));
    expect(await w.report(names(2))).toBe('applied');
    expect(w.kicked).toEqual([names(2)]);
  });

  it('by the check function, without a check here (the relay harness)', async () => {
    const w = world();
    await w.report(names(2));
    expect(w.kicked).toEqual([names(2)]);
  });
});

describe('relay report: fails closed', () => {
  it('without keys, and without the development flag, every report is refused and nothing is stored', async () => {
    const w = world(undefined, false);
    expect(await w.report(names(1))).toBe('rejected');
    expect(w.kicked).toEqual([]);
  });
});
