/**
 * The steady-state targets: all background work together at ≤ 0.05 Firestore reads and
 * ≤ 0.01 writes per proxy per cycle, and ≤ $3 a month for 1,000 proxies at a 1-minute interval.
 * Measured with the check function's sweep cache warm (one instance, every page cached); the
 * cold-instance rows say what the same cycle costs when no page is cached.
 */
import { monthlyCost } from './cost-model.js';
import type { Counts } from './counting.js';
import { totalOf, type CycleCost, type SweepResult } from './fleet-bench.js';
import { fmt, usd, yes } from './stats.js';

export const KIND_LABEL = {
  relay: 'relay-backed (`process`)',
  direct: 'directly probed (gcp/kubernetes-like)',
} as const;
export const READS_TARGET = 0.05;
export const WRITES_TARGET = 0.01;
export const MONTHLY_TARGET_USD = 3;

function sub(a: Counts, b: Counts): Counts {
  const out = { ...a };
  for (const key of Object.keys(out) as (keyof Counts)[]) out[key] = a[key] - b[key];
  return out;
}

function add(a: Counts, b: Counts): Counts {
  const out = { ...a };
  for (const key of Object.keys(out) as (keyof Counts)[]) out[key] = a[key] + b[key];
  return out;
}

/** One cycle's rows: warm (the targets) and as if every sweep page were served by a cold instance. */
function cycleRows(cycle: CycleCost, sweep: SweepResult): string[][] {
  const n = cycle.size;
  const label = `${KIND_LABEL[cycle.kind]}, ${n} proxies`;
  const total = totalOf(cycle);
  const cold = add(sub(total, sweep.counts), sweep.cold);
  const cost = monthlyCost(total, cycle.checkIntervalSeconds);
  const coldCost = monthlyCost(cold, cycle.checkIntervalSeconds);
  const oneMinute = cycle.checkIntervalSeconds === 60 && n === 1000;
  return [
    [
      `reads/proxy/cycle, all background work, warm check instance, ${label}`,
      `≤ ${READS_TARGET}`,
      `${fmt(total.reads / n, 3)} (sweep alone ${fmt(sweep.counts.reads / n, 3)})`,
      yes(total.reads / n <= READS_TARGET),
    ],
    [
      `writes/proxy/cycle, all background work, ${label}`,
      `≤ ${WRITES_TARGET}`,
      `${fmt(total.writes / n, 3)} (deletes ${fmt(total.deletes / n, 3)})`,
      yes(total.writes / n <= WRITES_TARGET),
    ],
    [
      `monthly cost, ${n} proxies, ${cycle.checkIntervalSeconds}-s interval, warm check instance, ${KIND_LABEL[cycle.kind]}`,
      oneMinute ? `≤ $${MONTHLY_TARGET_USD}` : '—',
      usd(cost.total),
      oneMinute ? yes(cost.total <= MONTHLY_TARGET_USD) : 'info',
    ],
    [
      `reads/proxy/cycle, all background work, every sweep page on a cold instance, ${label}`,
      'info',
      `${fmt(cold.reads / n, 3)} (that sweep ${fmt(sweep.cold.reads / n, 3)}; ${usd(coldCost.total)}/month)`,
      'info',
    ],
  ];
}

export function backgroundRows(r: { cycles: CycleCost[]; sweeps: SweepResult[] }): string[][] {
  return r.cycles.flatMap((cycle) => {
    const sweep = r.sweeps.find((s) => s.kind === cycle.kind && s.size === cycle.size);
    return sweep ? cycleRows(cycle, sweep) : [];
  });
}
