/** The targets table: every target named, met only when the measured figure is within it. */
import { describe, expect, it } from 'vitest';
import { zeroCounts, type Counts } from './counting.js';
import type { CycleCost, SweepResult } from './fleet-bench.js';
import { targetsTable, type BenchResults } from './report.js';

const counts = (c: Partial<Counts>): Counts => ({ ...zeroCounts(), ...c });

function sweep(size: number, reads: number, invocations: number): SweepResult {
  return {
    kind: 'direct',
    size,
    counts: counts({ reads, invocations }),
    wallMs: [1000, 1200, 1100],
    firstMs: 1500,
    refresh: { ms: 2000, counts: counts({ reads: 3 * size, writes: size }) },
    cold: counts({ reads: size + 11, invocations }),
    failures: [],
  };
}

function results(sweepReads: number, sweepInvocations: number): BenchResults {
  const cycle: CycleCost = {
    kind: 'direct',
    size: 1000,
    checkIntervalSeconds: 60,
    refreshSeconds: 21600,
    sources: [
      { name: 'check sweep', perCycle: counts({ reads: sweepReads, invocations: sweepInvocations }), note: '' },
    ],
  };
  return {
    date: '2026-11-29T00:00:00Z',
    machine: 'test',
    coldStart: [{ name: 'check', importMs: [12, 12, 12], helloMs: [10, 10, 10], ratios: [1.2, 1.2, 1.2] }],
    imports: [],
    orchestration: [{ floorMs: 100, publishToCreateMs: 250, reachableToReadyMs: 300 }],
    sweeps: [sweep(100, 100, 1), sweep(1000, sweepReads, sweepInvocations)],
    cycles: [cycle],
    errors: [],
  };
}

const row = (table: string, measure: string) => {
  const line = table.split('\n').find((l) => l.includes(measure));
  if (!line) throw new Error(`no row ${measure}`);
  return line.split('|').map((c) => c.trim());
};

describe('targetsTable', () => {
  it('meets a target only within it: one read per proxy, one invocation per batch of 100', () => {
    const met = targetsTable(results(1000, 10));
    expect(row(met, 'reads/proxy, one check sweep')[4]).toBe('yes');
    expect(row(met, 'invocations per 100 proxies, one check sweep')[4]).toBe('yes');
    const missed = targetsTable(results(1011, 11));
    expect(row(missed, 'reads/proxy, one check sweep')[3]).toBe('1.011 (1000 + 11 on 11 pages)');
    expect(row(missed, 'reads/proxy, one check sweep')[4]).toBe('NO');
    expect(row(missed, 'invocations per 100 proxies, one check sweep')[4]).toBe('NO');
  });

  it('names every target of the issue, the ratios and the libvirt row', () => {
    const table = targetsTable(results(1000, 10));
    expect(row(table, 'refresh writes/proxy')[4]).toBe('yes');
    expect(row(table, 'publish → provider create')[3]).toBe('2.5×');
    expect(row(table, 'instance reachable → proxy Ready')[4]).toBe('yes');
    expect(row(table, 'cold start `check`')[4]).toBe('yes');
    expect(row(table, 'sweep of 1000 proxies')[4]).toBe('yes (at 1000 only)');
    expect(row(table, 'cost growth 100 → 1000')[4]).toBe('yes');
    expect(row(table, 'monthly cost, 1000 proxies')[3]).toMatch(/^\$\d+\.\d\d$/);
    expect(row(table, 'libvirt client')[3]).toBe('not measured (left out with --only)');
  });

  it('cold start against the clients-only reference: each function ≤ 0.5×, paired round by round', () => {
    const clients = {
      name: 'clients',
      reference: true,
      importMs: [100, 400, 100],
      helloMs: [10, 10, 10],
      ratios: [10, 40, 10],
    };
    const fast = { name: 'check', importMs: [30, 160, 60], helloMs: [10, 10, 10], ratios: [3, 16, 6] };
    const slow = { name: 'api', importMs: [60, 100, 60], helloMs: [10, 10, 10], ratios: [6, 10, 6] };
    const table = targetsTable({ ...results(1000, 10), coldStart: [fast, slow, clients] });
    // Pairs 0.3, 0.4, 0.6 → median 0.4; unpaired medians would say 60/100 = 0.6 (NO).
    expect(row(table, 'cold start `check` × clients-only reference').slice(2, 5)).toEqual(['≤ 0.5×', '0.4×', 'yes']);
    // Pairs 0.6, 0.25, 0.6 → 0.6.
    expect(row(table, 'cold start `api` × clients-only reference').slice(3, 5)).toEqual(['0.6×', 'NO']);
    const alone = targetsTable({ ...results(1000, 10), coldStart: [fast] });
    expect(row(alone, 'cold start `check` × clients-only reference').slice(3, 5)).toEqual(['not run', 'NO']);
  });

  it("counts the functions' 5xx answers: any is NO, none of some pushes is met, no pushes is unmeasured", () => {
    const label = 'error responses (5xx) of the functions';
    const failing = { check: { '200': 10, '500': 2 }, create: { '204': 3, unreachable: 1 } };
    const bad = targetsTable({ ...results(1000, 10), functionResponses: failing });
    expect(row(bad, label).slice(3, 5)).toEqual(['3 of 16 pushes (check 2, create 1)', 'NO']);
    const good = targetsTable({ ...results(1000, 10), functionResponses: { check: { '204': 9 } } });
    expect(row(good, label).slice(3, 5)).toEqual(['0 of 9 pushes', 'yes']);
    expect(row(targetsTable(results(1000, 10)), label)[4]).toBe('—');
  });

  it('the background targets: strict, warm, with the cold-instance cost beside them', () => {
    const met = targetsTable(results(40, 10));
    expect(row(met, 'reads/proxy/cycle, all background work, warm check instance')[4]).toBe('yes');
    expect(row(met, 'writes/proxy/cycle, all background work')[4]).toBe('yes');
    // 40 reads a cycle: 1.73 M a month, 0.23 M past the free quota.
    expect(row(met, 'monthly cost, 1000 proxies, 60-s interval, warm').slice(2, 5)).toEqual(['≤ $3', '$0.14', 'yes']);
    expect(row(met, 'every sweep page on a cold instance')[3]).toMatch(/^1\.011 \(that sweep 1\.011; /);
    const missed = targetsTable(results(51, 10));
    expect(row(missed, 'reads/proxy/cycle, all background work, warm check instance')[4]).toBe('NO');
  });

  it('a section that did not run says so instead of passing', () => {
    const table = targetsTable({ ...results(1000, 10), orchestration: [] });
    expect(row(table, 'orchestration overhead')[3]).toBe('not run');
  });
});
