/** The gateway's bench rows: met only within the targets, "not run" when left out. */
import { describe, expect, it } from 'vitest';
import type { GatewayResults } from './gateway-bench.js';
import { gatewayRows } from './report.js';

const run = (over: Partial<GatewayResults> = {}): GatewayResults => ({
  directP50Ms: 0.4,
  gatewayP50Ms: 0.9,
  directRps: 1000,
  gatewayRps: 850,
  tunnels: { count: 1000, failed: 0, rssMb: 90 },
  soak: { seconds: 60, rssMb: [80, 100, 101, 102, 103, 104, 105, 106] },
  ...over,
});
const met = (g?: GatewayResults) => gatewayRows(g).map((r) => r[3]);

describe('gateway bench rows', () => {
  it('are met within every target', () => expect(met(run())).toEqual(['yes', 'yes', 'yes', 'yes']));

  it.each([
    ['added p50 above 1 ms', { gatewayP50Ms: 1.41 }, 0],
    ['throughput below 80 %', { gatewayRps: 799 }, 1],
    ['RSS above 200 MB', { tunnels: { count: 1000, failed: 0, rssMb: 201 } }, 2],
    ['a tunnel not held', { tunnels: { count: 999, failed: 1, rssMb: 90 } }, 2],
    ['RSS growing after the first quarter', { soak: { seconds: 60, rssMb: [80, 100, 105, 111] } }, 3],
  ])('say NO for %s', (_what, over, row) => {
    expect(met(run(over))[row]).toBe('NO');
  });

  it('say not run when the section was left out', () => expect(gatewayRows(undefined)[0]?.[2]).toBe('not run'));
});
