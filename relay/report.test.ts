/** Probe rounds and report building over a fake backend. */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../shared/logger.js';
import type { ProbeOptions, ProbeResult } from '../shared/probe/probe.js';
import type { Instance } from '../shared/providers/contract.js';
import { inventoryItemSchema, relayReportSchema, type CommandResult } from '../shared/wire/protocol.js';
import { CommandLedger } from './ledger.js';
import { HealthBook, probeRound } from './probes.js';
import { buildReport, MAX_RESULTS_PER_REPORT } from './report.js';
import { FakeBackend } from './testing/fake-backend.js';

const logger = createLogger({ write: () => undefined });
const spec = (name: string) => ({
  name,
  proxy: name,
  installationId: 'test',
  specHash: 'h',
  port: 0,
  placement: {},
  credentials: { username: 'u', password: 'pw-secret' },
});

describe('probeRound', () => {
  it('probes Running instances with their credentials and counts failures per incarnation', async () => {
    const backend = new FakeBackend('local');
    await backend.create(spec('ep-a'));
    await backend.create(spec('ep-b'));
    const stopped = backend.instances.get('ep-b');
    if (stopped) stopped.state = 'Terminated';
    const seen: ProbeOptions[] = [];
    let ok = false;
    const probe = (opts: ProbeOptions): Promise<ProbeResult> => {
      seen.push(opts);
      return Promise.resolve(
        ok ? { ok, latencyMs: 5, egressIp: '127.0.0.1' } : { ok, latencyMs: 5, error: 'proxy answered 407 to CONNECT' },
      );
    };
    const book = new HealthBook();
    const deps = {
      backends: new Map([['local', backend]]),
      book,
      echoUrl: 'http://echo/',
      timeoutMs: 100,
      logger,
      probe,
    };
    await probeRound(deps);
    await probeRound(deps);
    expect(seen.map((o) => [o.port, o.username, o.password, o.echoUrl])).toEqual([
      [30000, 'u', 'pw-secret', 'http://echo/'],
      [30000, 'u', 'pw-secret', 'http://echo/'],
    ]);
    const a = backend.instances.get('ep-a');
    if (!a) throw new Error('missing');
    expect(book.get('local', a)).toMatchObject({ ok: false, consecutiveFailures: 2 });
    ok = true;
    await probeRound(deps);
    expect(book.get('local', a)).toMatchObject({ ok: true, consecutiveFailures: 0, egressIp: '127.0.0.1' });
    expect(book.get('local', { name: 'ep-a', createdAt: a.createdAt + 1 })).toBeUndefined();
    await backend.delete('ep-a');
    await probeRound(deps);
    expect(book.get('local', a)).toBeUndefined();
  });
});

describe('buildReport', () => {
  const base = { relay: 'local', bootId: 'boot-1', seq: 3, startedAt: 1000, sentAt: 2000 };

  it('carries backend health, the inventory with provider, health and last commandId, and results', async () => {
    const backend = new FakeBackend('local');
    const instance = await backend.create(spec('ep-a'));
    const book = new HealthBook();
    book.update('local', instance, { ok: true, latencyMs: 4, egressIp: '127.0.0.1' }, new Date(1500));
    const ledger = await CommandLedger.load(undefined, logger);
    await ledger.record('local/ep-a', { commandId: 'c1', issuedAt: 10 });
    const results: CommandResult[] = [{ commandId: 'c1', provider: 'local', name: 'ep-a', kind: 'create', ok: true }];
    const report = await buildReport({
      ...base,
      backends: new Map([['local', backend]]),
      health: book,
      ledger,
      results,
    });
    expect(relayReportSchema.parse(report)).toEqual(report);
    expect(report.providers).toEqual([{ name: 'local', type: 'process', ok: true, message: 'fake' }]);
    expect(report.instances).toEqual([
      {
        name: 'ep-a',
        proxy: 'ep-a',
        installationId: 'test',
        specHash: 'h',
        state: 'Running',
        ip: '127.0.0.1',
        port: 30000,
        createdAt: instance.createdAt,
        provider: 'local',
        commandId: 'c1',
        health: {
          lastProbeAt: new Date(1500).toISOString(),
          ok: true,
          latencyMs: 4,
          egressIp: '127.0.0.1',
          consecutiveFailures: 0,
        },
      },
    ]);
    expect(report.results).toEqual(results);
    expect(JSON.stringify(report)).not.toContain('pw-secret');
  });

  it('carries every Instance field through the relay protocol to the inventory the functions read', async () => {
    const book = new HealthBook();
    const probed = { name: 'ep-a', createdAt: 1234 };
    const result = { ok: true, latencyMs: 4, egressIp: '203.0.113.9', tlsFingerprint: 'ab'.repeat(32) };
    // Required: a field added to the contract must be added here, or this does not compile.
    const instance: Required<Instance> = {
      ...probed,
      proxy: 'ep-a',
      installationId: 'test',
      specHash: 'h',
      state: 'Running',
      ip: '198.51.100.7',
      probeIp: '10.0.0.7',
      port: 3128,
      tlsPort: 3129,
      error: { code: 'Retryable', message: 'slow boot', field: 'spec.port', retryAfterMs: 500 },
      health: book.update('local', probed, result, new Date(1500)),
    };
    const backend = new FakeBackend('local');
    backend.instances.set('ep-a', { ...instance, credentials: { username: 'u', password: 'pw-secret' } });
    const ledger = await CommandLedger.load(undefined, logger);
    const report = await buildReport({
      ...base,
      backends: new Map([['local', backend]]),
      health: book,
      ledger,
      results: [],
    });
    // As the relay-report function receives it (JSON over Pub/Sub), and as the store reads it back.
    const received = relayReportSchema.parse(JSON.parse(JSON.stringify(report)));
    expect(received.instances).toEqual([{ ...instance, provider: 'local' }]);
    expect(inventoryItemSchema.parse(received.instances[0])).toEqual({ ...instance, provider: 'local' });
  });

  it('marks a backend whose listing fails as not ok, so absence is not read as NotFound', async () => {
    const backend = new FakeBackend('local');
    await backend.create(spec('ep-a'));
    backend.fail = (op) => (op === 'list' ? new Error('disk gone') : undefined);
    const ledger = await CommandLedger.load(undefined, logger);
    const report = await buildReport({
      ...base,
      backends: new Map([['local', backend]]),
      health: new HealthBook(),
      ledger,
      results: [],
    });
    expect(report.providers).toEqual([
      { name: 'local', type: 'process', ok: false, message: 'inventory unavailable: disk gone' },
    ]);
    expect(report.instances).toEqual([]);
  });

  it('carries at most the protocol limit of results', async () => {
    const ledger = await CommandLedger.load(undefined, logger);
    const results = Array.from({ length: MAX_RESULTS_PER_REPORT + 5 }, (_, i): CommandResult => ({
      commandId: `c${i}`,
      provider: 'local',
      name: 'ep-a',
      kind: 'delete',
      ok: true,
    }));
    const report = await buildReport({ ...base, backends: new Map(), health: new HealthBook(), ledger, results });
    expect(report.results).toHaveLength(MAX_RESULTS_PER_REPORT);
  });
});
