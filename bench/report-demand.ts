/** The bench's rows for fleets that follow demand: wake from zero, the replayed trace, the step up, and what reported demand costs. */
import { parseDuration } from '../shared/domain/duration.js';
import type { DemandCost } from './demand-cost.js';
import type { DemandResults } from './demand-bench.js';
import { fmt, median, ms, yes } from './stats.js';

/** A duration of the pool spec ("15000ms") in seconds. */
const inSeconds = (d: string) => `${fmt((parseDuration(d) ?? 0) / 1000, 1)} s`;
const pct = (x: number) => `${fmt(x * 100, 1)} %`;
const WAKE =
  "first request at zero → its first byte ÷ the pool's own create → Ready (a pool of one applied by hand → its member Ready; local stack, process backend)";
const TRACE = 'replayed hour (idle 13 min, base 7, 10× burst 10, base 17, idle 13)';

/** In-process rows are strict; without results every row says not run. */
export function demandRows(r: DemandResults | undefined): string[][] {
  const why = 'not run';
  if (!r)
    return [
      [WAKE, '≤ 1.2×', why, '—'],
      [`${TRACE}: member-seconds, autoscaled ÷ fixed pool sized for the peak`, '≤ 40 %', why, '—'],
      [`${TRACE}: requests served through the autoscaled pool`, '≥ 99.5 %, none lost', why, '—'],
      ['scaling reaction to a step up (base → 10×): the decision', '≤ report + autoscale interval', why, '—'],
      ['demand writes per gateway per pool per report interval', '≤ 1', why, '—'],
      ['pool reconciles per autoscale interval, whatever the number of gateways', '≤ 1', why, '—'],
    ];
  return [...wakeRows(r), ...traceRows(r), ...stepRows(r), ...costRows(r.cost, r.costError)];
}

function wakeRows(r: DemandResults): string[][] {
  const ratio = median(r.wake.map((w) => w.firstByteMs / w.poolCreateToReadyMs));
  const rounds = r.wake
    .map((w) => `${ms(w.firstByteMs)} ÷ ${ms(w.poolCreateToReadyMs)}, member ${ms(w.createToReadyMs)}`)
    .join('; ');
  return [[`${WAKE}, median of ${r.wake.length}`, '≤ 1.2×', `${fmt(ratio, 2)}× (${rounds})`, yes(ratio <= 1.2)]];
}

function traceRows(r: DemandResults): string[][] {
  const { autoscaled: a, fixed: f, seconds } = r.trace;
  const share = a.memberSeconds / f.memberSeconds;
  const total = (x: typeof a.answers) => x.served + x.refused + x.lost;
  const served = a.answers.served / total(a.answers);
  const answers = (x: typeof a.answers) =>
    `${x.served} of ${total(x)} served, ${x.refused} answered 503 in time, ${x.lost} lost${x.samples.length > 0 ? ` (${x.samples.join('; ')})` : ''}`;
  return [
    [
      `${TRACE} in ${seconds} s, windows compressed alike (scaleDownAfter ${inSeconds(r.trace.shape.scaleDownAfter)}, scaleToZeroAfter ${inSeconds(r.trace.shape.scaleToZeroAfter)}): member-seconds, autoscaled ÷ fixed pool of ${r.trace.fixedMembers} (sized for the peak)`,
      '≤ 40 %',
      `${pct(share)} (${fmt(a.memberSeconds, 0)} vs ${fmt(f.memberSeconds, 0)} member-s)`,
      yes(share <= 0.4),
    ],
    [
      `${TRACE}: requests served through the autoscaled pool`,
      '≥ 99.5 %, none lost',
      `${pct(served)} (${answers(a.answers)})`,
      yes(served >= 0.995 && a.answers.lost === 0),
    ],
    [`${TRACE}: the fixed pool, same requests (reference)`, 'info', answers(f.answers), 'info'],
  ];
}

/**
 * The step's targets, from the stack's own intervals: the decision waits for the gateway's next
 * report and then the pool's next interval reconcile (scaleUpStabilization is 0 s), so at most one
 * of each; the peak is Ready at most a member's create → Ready later (1.2× the wake rounds' median, as above).
 */
function stepRows(r: DemandResults): string[][] {
  const { decidedMs, readyMs, members } = r.trace.stepUp;
  const decideBound = (r.intervals.report + r.intervals.autoscale) * 1000;
  const readyBound = decideBound + 1.2 * median(r.wake.map((w) => w.createToReadyMs));
  const shown = (v: number | undefined) => (v === undefined ? 'not reached' : `${fmt(v / 1000, 1)} s`);
  return [
    [
      `scaling reaction to a step up (base → 10×): until desired reaches its peak decision (${members})`,
      `≤ ${fmt(decideBound / 1000, 1)} s (report ${r.intervals.report} s + autoscale interval ${r.intervals.autoscale} s)`,
      shown(decidedMs),
      yes(decidedMs !== undefined && decidedMs <= decideBound),
    ],
    [
      `scaling reaction to a step up (base → 10×): until its peak decision (${members}) is Ready`,
      `≤ ${fmt(readyBound / 1000, 1)} s (the above + 1.2 × member create → Ready)`,
      shown(readyMs),
      yes(readyMs !== undefined && readyMs <= readyBound),
    ],
  ];
}

function costRows(c: DemandCost | undefined, error: string | undefined): string[][] {
  if (!c)
    return [
      ['demand writes per gateway per pool per report interval', '≤ 1', `not run: ${error ?? ''}`, '—'],
      [
        'pool reconciles per autoscale interval, whatever the number of gateways',
        '≤ 1',
        `not run: ${error ?? ''}`,
        '—',
      ],
    ];
  const pairs = c.gateways + 1;
  const reports = Object.values(c.reports).reduce((a, b) => a + b, 0);
  const writesPerInterval = c.api.writes / (pairs * c.intervals);
  const minutes = (c.intervals * c.intervalSeconds) / 60;
  const perGatewayMinute = (n: number) => fmt(n / (c.gateways * minutes), 1);
  const window = `${c.intervals} intervals of ${c.intervalSeconds} s`;
  const reconcileRow = (pool: string, gateways: number) => {
    const n = c.reconciles[pool] ?? 0;
    return [
      `pool reconciles per autoscale interval, a pool ${gateways} gateway${gateways === 1 ? '' : 's'} report`,
      '≤ 1',
      `${fmt(n / c.intervals, 2)} (${n} in ${window})`,
      yes(n <= c.intervals && c.failures.length === 0),
    ];
  };
  return [
    [
      `demand writes per gateway per pool per report interval (${c.gateways} gateways, ${pairs} gateway-pool pairs)`,
      '≤ 1',
      `${fmt(writesPerInterval, 2)} (${c.api.writes} writes, ${reports} reports in ${window})`,
      yes(writesPerInterval <= 1 && c.failures.length === 0),
    ],
    [
      'demand route reads per report (the pool, the gateway’s document)',
      '≤ 2',
      `${fmt(c.api.reads / reports, 2)} (${c.api.reads} reads)`,
      yes(c.api.reads <= 2 * reports),
    ],
    reconcileRow(c.onePool, 1),
    reconcileRow(c.manyPool, c.gateways),
    [
      'Firestore per gateway-minute: demand route + pool controller',
      'info',
      `reads ${perGatewayMinute(c.api.reads)} + ${perGatewayMinute(c.controller.reads)}, writes ${perGatewayMinute(c.api.writes)} + ${perGatewayMinute(c.controller.writes)}${c.failures.length > 0 ? `; ${c.failures.length} failures: ${c.failures.slice(0, 2).join('; ')}` : ''}`,
      'info',
    ],
  ];
}
