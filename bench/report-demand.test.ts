/** The demand rows and the helpers they are measured with: member-seconds within the window, step times, strict targets. */
import { describe, expect, it } from 'vitest';
import type { DemandCost } from './demand-cost.js';
import type { DemandResults } from './demand-bench.js';
import { memberSeconds, phaseAt, phaseStart, stepReaction, timeUntil, type MemberLife } from './demand-trace.js';
import { demandRows } from './report-demand.js';
import { zeroCounts } from './counting.js';

const cost = (over: Partial<DemandCost> = {}): DemandCost => ({
  gateways: 8,
  onePool: 'one',
  manyPool: 'many',
  intervalSeconds: 5,
  intervals: 12,
  reports: { one: 12, many: 96 },
  api: { ...zeroCounts(), reads: 216, writes: 108 },
  controller: { ...zeroCounts(), reads: 300, writes: 10 },
  reconciles: { one: 12, many: 12 },
  failures: [],
  ...over,
});

const results = (over: Partial<DemandResults['trace']> = {}, c = cost()): DemandResults => ({
  wake: [
    { firstByteMs: 2200, poolCreateToReadyMs: 2000, createToReadyMs: 1500 },
    { firstByteMs: 2100, poolCreateToReadyMs: 2000, createToReadyMs: 1500 },
  ],
  trace: {
    shape: { phases: [], scaleDownAfter: '15s', scaleToZeroAfter: '20s' },
    seconds: 150,
    autoscaled: { memberSeconds: 290, answers: { served: 1000, refused: 0, lost: 0, samples: [] } },
    fixed: { memberSeconds: 750, answers: { served: 1000, refused: 0, lost: 0, samples: [] } },
    autoscaledMembers: [],
    fixedMembers: 5,
    stepUp: { decidedMs: 6000, readyMs: 9000, members: 5 },
    ...over,
  },
  intervals: { report: 5, autoscale: 5 },
  cost: c,
});
const met = (rows: string[][]) => rows.map((r) => r[3]);

describe('demand rows', () => {
  it('meets every target with figures inside them', () => {
    expect(met(demandRows(results())).filter((m) => m !== 'info')).toEqual(Array(9).fill('yes'));
  });

  it('says NO above 40 % of the member-seconds, for a lost request, and a step not reached', () => {
    const rows = demandRows(
      results({
        autoscaled: { memberSeconds: 301, answers: { served: 1000, refused: 0, lost: 1, samples: ['burst: 0 reset'] } },
        stepUp: { decidedMs: 6000, members: 5 },
      }),
    );
    expect(met(rows).slice(1, 3)).toEqual(['NO', 'NO']);
    expect(rows[5]?.[2]).toBe('not reached');
    expect(rows[5]?.[3]).toBe('NO');
  });

  it('holds reconciles and writes to one per interval, and a failure makes them NO', () => {
    const over = met(
      demandRows(
        results({}, cost({ reconciles: { one: 12, many: 13 }, api: { ...zeroCounts(), reads: 216, writes: 109 } })),
      ),
    );
    expect(over.slice(6, 10)).toEqual(['NO', 'yes', 'yes', 'NO']);
    const failed = met(demandRows(results({}, cost({ failures: ['boom'] }))));
    expect(failed.slice(6, 10)).toEqual(['NO', 'yes', 'NO', 'NO']);
    expect(demandRows(undefined).every((r) => r[2] === 'not run')).toBe(true);
  });
});

describe('demand trace helpers', () => {
  const phases = [
    { name: 'idle', seconds: 10, concurrency: 0 },
    { name: 'burst', seconds: 5, concurrency: 10 },
  ];

  it('finds the phase at a time and where one starts', () => {
    expect(phaseAt(phases, 9_999)?.name).toBe('idle');
    expect(phaseAt(phases, 10_000)?.name).toBe('burst');
    expect(phaseAt(phases, 15_000)).toBeUndefined();
    expect(phaseStart(phases, 'burst')).toBe(10_000);
  });

  it('counts member-seconds of one pool within the window only', () => {
    const lives: MemberLife[] = [
      { name: 'a', pool: 'p', createdAt: 0, goneAt: 5000 },
      { name: 'b', pool: 'p', createdAt: 8000 },
      { name: 'c', pool: 'q', createdAt: 0 },
    ];
    expect(memberSeconds(lives, 'p', 2000, 10_000)).toBe(3 + 2);
  });

  it('times a step from its start, ignoring samples before it', () => {
    const samples = [
      { at: 100, desired: 5, ready: 0 },
      { at: 1000, desired: 1, ready: 1 },
      { at: 4000, desired: 5, ready: 1 },
      { at: 9000, desired: 5, ready: 5 },
    ];
    expect(timeUntil(samples, 500, (s) => s.desired >= 5)).toBe(3500);
    expect(timeUntil(samples, 500, (s) => s.ready >= 6)).toBeUndefined();
  });
});

describe("demand: the step reaction is judged against the autoscaler's own peak decision", () => {
  const at = (t: number, desired: number, ready: number) => ({ at: t, desired, ready });
  const samples = [
    at(0, 1, 1),
    at(900, 1, 1),
    at(1000, 2, 1),
    at(1500, 4, 1),
    at(3000, 4, 3),
    at(4000, 4, 4),
    at(9000, 1, 4),
  ];

  it('takes the highest desired count within the step, when it was asked for and when it was Ready', () => {
    expect(stepReaction(samples, 950, 8000)).toEqual({ members: 4, decidedMs: 550, readyMs: 3050 });
  });

  it('leaves out what was not reached, and a step with no decision asks for nothing', () => {
    expect(stepReaction(samples.slice(0, 5), 950, 8000)).toEqual({ members: 4, decidedMs: 550 });
    expect(stepReaction([at(0, 0, 0)], 950, 8000)).toEqual({ members: 0 });
  });
});
