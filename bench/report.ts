/** The bench's tables: targets and whether they are met, then the figures behind them. */
import type { ColdStart } from './cold-start.js';
import { backgroundRows, KIND_LABEL } from './report-background.js';
import { coldRows } from './report-cold.js';
import { gatewayRows, libvirtRow, type LibvirtRatio } from './report-gateway.js';
import { learningRows } from './report-learning.js';
import { demandRows } from './report-demand.js';
import type { DemandResults } from './demand-bench.js';
import { peerRows } from './report-peers.js';
import type { PeerResults } from './peer-bench.js';
import type { LearningResults } from './learning-bench.js';
import { monthlyCost, PRICE_SOURCES, PRICES_RECORDED_ON } from './cost-model.js';
import type { Counts } from './counting.js';
import { totalOf, type CycleCost, type SweepResult } from './fleet-bench.js';
import type { GatewayResults } from './gateway-bench.js';
import type { OrchestrationTrial } from './orchestration.js';
import { POOL_REPLICAS, type PoolRoll } from './orchestration-pool.js';
import { localProxyRows, type LocalProxiesResults } from './local-proxies.js';
import { errorResponses } from './status-tally.js';
import { fmt, markdownTable, median, ms, usd, yes } from './stats.js';

export interface BenchResults {
  date: string;
  machine: string;
  coldStart: ColdStart[];
  /** Each package the `check` bundle imports statically, imported alone (median ms). */
  imports: { name: string; importMs: number }[];
  orchestration: OrchestrationTrial[];
  /** Function → HTTP status → pushes answered, over the orchestration trials (bench/status-tally.ts). */
  functionResponses?: Record<string, Record<string, number>>;
  /** The pool phase on the orchestration stack (bench/orchestration-pool.ts), when it ran. */
  poolRoll?: PoolRoll;
  sweeps: SweepResult[];
  cycles: CycleCost[];
  /** The libvirt client bench (bench/libvirt.ts), unless left out with `--only`. */
  libvirt?: LibvirtRatio;
  /** The gateway against one fleet proxy directly (bench/gateway-bench.ts), unless left out with `--only`. */
  gateway?: GatewayResults;
  /** The gateway that learns (bench/learning-bench.ts), unless left out with `--only`. */
  learning?: LearningResults;
  /** The gateway against proxy-chain and Squid (bench/peer-bench.ts), unless left out with `--only`. */
  peers?: PeerResults;
  /** The process backend's proxies at scale (bench/local-proxies.ts), unless left out with `--only`. */
  localProxies?: LocalProxiesResults;
  /** Fleets that follow demand on the local stack (bench/demand-bench.ts), unless left out with `--only`. */
  demand?: DemandResults;
  /** Sections that failed (their targets show as not run). */
  errors: string[];
}

const per = (c: Counts, n: number) => ({
  reads: c.reads / n,
  writes: c.writes / n,
  deletes: c.deletes / n,
  messages: c.messages / n,
  invocations: c.invocations / n,
});

/** A sweep's reads beyond one per proxy, and its pages: "1000 + 11 on 11 pages" ("32 on 11 pages" when fewer). */
function extras(c: Counts, n: number): string {
  return c.reads >= n ? `${n} + ${c.reads - n} on ${c.invocations} pages` : `${c.reads} on ${c.invocations} pages`;
}

function steadyRows(r: BenchResults): string[][] {
  const rows: string[][] = [];
  // The rows for the first (smallest) measured cycle of each kind; report-background.ts has every size.
  const first = r.cycles.filter((c, i, all) => all.findIndex((o) => o.kind === c.kind) === i);
  for (const cycle of first) {
    const n = cycle.size;
    const sweep = r.sweeps.find((s) => s.kind === cycle.kind && s.size === n);
    const sweepSource = cycle.sources.find((s) => s.name === 'check sweep');
    if (!sweep || !sweepSource) continue;
    const steady = per(sweep.counts, n);
    const averaged = per(sweepSource.perCycle, n);
    const total = per(totalOf(cycle), n);
    const label = KIND_LABEL[cycle.kind];
    const batches = Math.ceil(n / 100);
    const beat = sweep.refresh ? per(sweep.refresh.counts, n) : undefined;
    const cost = monthlyCost(totalOf(cycle), cycle.checkIntervalSeconds);
    rows.push(
      [
        `reads/proxy, one check sweep, ${label}`,
        '≤ 1',
        `${fmt(steady.reads, 3)} (${extras(sweep.counts, n)})`,
        yes(steady.reads <= 1),
      ],
      [`writes/proxy, one check sweep, ${label}`, '0', fmt(steady.writes, 3), yes(steady.writes === 0)],
      [
        `refresh writes/proxy, the sweep with the status refresh due, ${label}`,
        '≤ 1 per refresh',
        beat
          ? `${fmt(beat.writes, 3)} every ${cycle.refreshSeconds} s (that sweep reads ${fmt(beat.reads, 2)}/proxy)`
          : 'not measured',
        beat ? yes(beat.writes <= 1) : '—',
      ],
      [
        `reads/proxy/cycle, check sweeps with the refresh share, ${label}`,
        '≤ 1',
        `${fmt(averaged.reads, 3)} (writes ${fmt(averaged.writes, 3)})`,
        yes(averaged.reads <= 1),
      ],
      [
        `reads/proxy/cycle, all background work, ${label}`,
        '≤ 1',
        `${fmt(total.reads, 3)} (writes ${fmt(total.writes, 3)})`,
        yes(total.reads <= 1),
      ],
      [
        `invocations per 100 proxies, one check sweep, ${label}`,
        '≤ 1',
        `${fmt(sweep.counts.invocations / (n / 100), 2)} (${sweep.counts.invocations} for ${batches} batches)`,
        yes(sweep.counts.invocations <= batches),
      ],
      [
        `invocations per 100 proxies/cycle, all background work, ${label}`,
        '≤ 1',
        fmt(total.invocations * 100, 2),
        yes(totalOf(cycle).invocations <= batches),
      ],
      [`monthly cost, ${n} proxies, 1-min interval, ${label}`, '—', usd(cost.total), 'info'],
    );
  }
  return rows;
}

function orchestrationRows(
  trials: OrchestrationTrial[],
  responses: Record<string, Record<string, number>> = {},
  pool?: PoolRoll,
): string[][] {
  if (trials.length === 0) return [['orchestration overhead', '≤ 3× floor', 'not run', '—']];
  const hop = (pick: (t: OrchestrationTrial) => number) => median(trials.map((t) => pick(t) / t.floorMs));
  const create = hop((t) => t.publishToCreateMs);
  const ready = hop((t) => t.reachableToReadyMs);
  const floor = median(trials.map((t) => t.floorMs));
  return [
    [`publish → provider create, × floor (floor median ${ms(floor)})`, '≤ 3×', `${fmt(create, 1)}×`, yes(create <= 3)],
    ['instance reachable → proxy Ready, × floor', '≤ 3×', `${fmt(ready, 1)}×`, yes(ready <= 3)],
    ['publish → provider create, × floor (issue 17)', '≤ 2×', `${fmt(create, 1)}×`, yes(create <= 2)],
    ['instance reachable → proxy Ready, × floor (issue 17)', '≤ 2×', `${fmt(ready, 1)}×`, yes(ready <= 2)],
    errorResponsesRow(trials.length, responses, pool),
    ...(pool
      ? [
          [
            `pool of ${POOL_REPLICAS} on the same stack: up, one template roll, delete`,
            'info',
            `${ms(pool.upMs)}, ${ms(pool.rollMs)}, ${ms(pool.deleteMs)}`,
            'info',
          ],
        ]
      : []),
  ];
}

/** The 5xx answers of the functions while proxies were created, made Ready and deleted (and the pool rolled). */
function errorResponsesRow(
  trials: number,
  responses: Record<string, Record<string, number>>,
  pool: PoolRoll | undefined,
): string[] {
  const all = Object.values(responses).reduce((n, c) => n + Object.values(c).reduce((a, b) => a + b, 0), 0);
  const errors = Object.entries(responses).map(([fn, c]) => [fn, errorResponses(c)] as const);
  const total = errors.reduce((n, [, e]) => n + e, 0);
  const detail = errors.filter(([, e]) => e > 0).map(([fn, e]) => `${fn} ${e}`);
  return [
    `error responses (5xx) of the functions, ${trials + 1} proxies created → Ready → deleted${pool ? `, a pool of ${POOL_REPLICAS} up, rolled and deleted` : ''}`,
    '0',
    `${total} of ${all} pushes${detail.length > 0 ? ` (${detail.join(', ')})` : ''}`,
    all === 0 ? '—' : yes(total === 0),
  ];
}

function scaleRows(r: BenchResults): string[][] {
  const rows: string[][] = [];
  for (const kind of ['direct', 'relay'] as const) {
    const sweeps = r.sweeps.filter((s) => s.kind === kind).sort((a, b) => a.size - b.size);
    const largest = sweeps.at(-1);
    const smallest = sweeps[0];
    if (!largest || !smallest) continue;
    const wall = median(largest.wallMs);
    const worst = Math.max(wall, largest.firstMs, largest.refresh.ms);
    const growth = largest.counts.reads / largest.size / (smallest.counts.reads / smallest.size);
    rows.push(
      [
        `sweep of ${largest.size} proxies, ${KIND_LABEL[kind]}`,
        '≤ 60 s',
        `${fmt(wall / 1000, 1)} s (${fmt(largest.size / (wall / 1000), 0)} proxies/s); slowest ${fmt(worst / 1000, 1)} s`,
        largest.size >= 10_000 ? yes(worst <= 60_000) : `${yes(worst <= 60_000)} (at ${largest.size} only)`,
      ],
      [
        `cost growth ${smallest.size} → ${largest.size}, ${KIND_LABEL[kind]}`,
        // The target is no super-linear growth; a warm sweep's per-page constants make it sub-linear.
        'at most linear',
        `reads/proxy ×${fmt(growth, 2)}`,
        yes(growth < 1.1),
      ],
    );
  }
  return rows;
}

/** The table of targets: every measure, its target, the result and whether it is met. */
export function targetsTable(r: BenchResults): string {
  const rows = [
    ...steadyRows(r),
    ...backgroundRows(r),
    ...orchestrationRows(r.orchestration, r.functionResponses, r.poolRoll),
    ...coldRows(r.coldStart),
    ...scaleRows(r),
    libvirtRow(r.libvirt),
    ...gatewayRows(r.gateway),
    ...learningRows(r.learning),
    ...peerRows(r.peers),
    ...localProxyRows(r.localProxies),
    ...demandRows(r.demand),
  ];
  return markdownTable(['measure', 'target', 'result', 'met'], rows);
}

/** Where each cycle's operations come from, for the fleets measured at steady state. */
export function cycleTable(r: BenchResults): string {
  const rows: string[][] = [];
  for (const cycle of r.cycles) {
    for (const s of [...cycle.sources, { name: 'total', perCycle: totalOf(cycle), note: '' }]) {
      const p = per(s.perCycle, cycle.size);
      rows.push([
        KIND_LABEL[cycle.kind],
        s.name,
        fmt(p.reads, 3),
        fmt(p.writes, 3),
        fmt(p.deletes, 3),
        fmt(s.perCycle.messages, 2),
        fmt(s.perCycle.invocations, 2),
        s.note,
      ]);
    }
  }
  const header = [
    'fleet',
    'source',
    'reads/proxy',
    'writes/proxy',
    'deletes/proxy',
    'messages',
    'invocations',
    'cadence',
  ];
  return markdownTable(header, rows);
}

export function costTable(r: BenchResults): string {
  const rows = r.cycles.map((cycle) => {
    const c = monthlyCost(totalOf(cycle), cycle.checkIntervalSeconds);
    return [
      KIND_LABEL[cycle.kind],
      String(cycle.size),
      usd(c.firestore),
      usd(c.pubsub),
      usd(c.invocations),
      usd(c.compute),
      usd(c.total),
    ];
  });
  const table = markdownTable(
    ['fleet', 'proxies', 'Firestore', 'Pub/Sub', 'requests', 'compute (est.)', 'total/month'],
    rows,
  );
  return `${table}\n\nList prices (USD) recorded on ${PRICES_RECORDED_ON}, not fetched by the bench (no network):\n${PRICE_SOURCES.map((s) => `- ${s}`).join('\n')}`;
}

export function scaleTable(r: BenchResults): string {
  const rows = r.sweeps.map((s) => {
    const p = per(s.counts, s.size);
    const wall = median(s.wallMs);
    return [
      KIND_LABEL[s.kind],
      String(s.size),
      `${fmt(wall / 1000, 2)} s`,
      fmt(s.size / (wall / 1000), 0),
      `${fmt(s.firstMs / 1000, 2)} s`,
      `${fmt(s.refresh.ms / 1000, 2)} s (${fmt(s.refresh.counts.reads / s.size, 2)} reads, ${fmt(s.refresh.counts.writes / s.size, 2)} writes per proxy)`,
      String(s.counts.reads),
      fmt(p.reads, 3),
      String(s.counts.writes),
      String(s.counts.invocations),
      s.report ? `${s.report.reads} reads, ${s.report.writes} writes` : '—',
    ];
  });
  const header = [
    'fleet',
    'proxies',
    'sweep (median)',
    'proxies/s',
    'first sweep',
    'refresh-due sweep',
    'reads',
    'reads/proxy',
    'writes',
    'invocations',
    'one relay report',
  ];
  return markdownTable(header, rows);
}

export function orchestrationTable(trials: OrchestrationTrial[]): string {
  const rows = trials.map((t, i) => [
    String(i + 1),
    ms(t.floorMs),
    ms(t.publishToCreateMs),
    `${fmt(t.publishToCreateMs / t.floorMs, 1)}×`,
    ms(t.reachableToReadyMs),
    `${fmt(t.reachableToReadyMs / t.floorMs, 1)}×`,
  ]);
  return markdownTable(['trial', 'floor', 'publish → create', '× floor', 'reachable → Ready', '× floor'], rows);
}
