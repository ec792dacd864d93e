/** The gateway's bench rows: met only within their targets, "not run" when left out. */
import { describe, expect, it } from 'vitest';
import type { GatewayResults } from './gateway-bench.js';
import { gatewayRows } from './report-gateway.js';

const run = (over: Partial<GatewayResults> = {}): GatewayResults => ({
  directP50Ms: 0.4,
  gatewayP50Ms: 0.9,
  directRps: 1000,
  gatewayRps: 850,
  tunnels: { count: 1000, failed: 0, rssMb: 90 },
  soak: { seconds: 600, rssMb: [80, 95, 100, 101, 100, 102, 101, 100, 101, 102, 100, 101] },
  tinyproxy: { directP50Ms: 0.5, gatewayP50Ms: 0.8, directRps: 900, gatewayRps: 760 },
  ...over,
});
const met = (g?: GatewayResults) => gatewayRows(g).map((r) => r[3]);

describe('gateway bench rows', () => {
  it('are met within every target, with the Node proxy-server rows as reference', () =>
    expect(met(run())).toEqual(['yes', 'yes', 'yes', 'yes', 'info', 'info']));

  it('keep the Node proxy-server rows as reference whatever they measure', () =>
    expect(met(run({ gatewayP50Ms: 1.41, gatewayRps: 100 })).slice(4)).toEqual(['info', 'info']));

  it.each([
    [
      'added p50 above 1 ms over tinyproxy',
      { tinyproxy: { directP50Ms: 0.5, gatewayP50Ms: 1.6, directRps: 900, gatewayRps: 760 } },
      0,
    ],
    [
      'throughput below 80 % of tinyproxy',
      { tinyproxy: { directP50Ms: 0.5, gatewayP50Ms: 0.8, directRps: 900, gatewayRps: 719 } },
      1,
    ],
    ['RSS above 200 MB', { tunnels: { count: 1000, failed: 0, rssMb: 201 } }, 2],
    ['a tunnel not held', { tunnels: { count: 999, failed: 1, rssMb: 90 } }, 2],
    [
      'RSS growing after warm-up',
      { soak: { seconds: 600, rssMb: [80, 100, 100, 100, 103, 105, 107, 109, 111, 113, 115, 117] } },
      3,
    ],
    [
      'a soak shorter than 10 minutes',
      { soak: { seconds: 300, rssMb: [80, 95, 100, 101, 100, 102, 101, 100, 101, 102, 100, 101] } },
      3,
    ],
  ])('say NO for %s', (_what, over, row) => {
    expect(met(run(over))[row]).toBe('NO');
  });

  it('say not run when the section was left out', () => expect(gatewayRows(undefined)[0]?.[2]).toBe('not run'));

  it('say not run for both targets when the tinyproxy rounds did not run', () => {
    const { tinyproxy: _left, ...without } = run();
    expect(
      gatewayRows(without)
        .slice(0, 2)
        .map((r) => r.slice(2)),
    ).toEqual([
      ['not run', '—'],
      ['not run', '—'],
    ]);
  });

  it('show the CPU per request of the gateway and the fleet proxy as info when measured', () => {
    const row = gatewayRows(run({ cpuPer1000: { fleetMs: 80, gatewayMs: 100 } }))[6];
    expect(row?.slice(2)).toEqual(['100 vs 80 ms (1.25×)', 'info']);
  });

  it('say not run (--soak) for the soak when it was not asked for', () => {
    const { soak: _left, ...noSoak } = run();
    expect(gatewayRows(noSoak)[3]?.slice(2)).toEqual(['not run (--soak)', '—']);
  });
});
