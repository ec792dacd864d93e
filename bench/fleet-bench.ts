/**
 * Stored fleets swept by the real check code with counted clients: the cost of one check cycle per
 * proxy (sweep, relay reports, health monitor and GC, each at its configured interval), and how a
 * sweep's time and cost grow from 100 to 10,000 proxies.
 */
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { clearFirestore } from '../infra/local/emulators.js';
import type { Provider } from '../shared/providers/contract.js';
import { createCheckEnv, type CheckEnv, type FleetKind } from './check-env.js';
import { diffCounts, zeroCounts, type Counts } from './counting.js';
import { createPoolProvider, seedFleet, type SeededFleet } from './seed.js';
import { SWEEP_CACHE_MAX_AGE_MS } from '../shared/reconcile/sweep-cache.js';
import { FLEET_GAUGE_INTERVAL_MS } from '../shared/health.js';
import { INVENTORY_CACHE_MAX_AGE_MS } from '../shared/reconcile/gc-inventory.js';

/** Production cadence assumed where the config does not say: a relay reports every 30 s (registry.ts). */
export const RELAY_REPORT_SECONDS = 30;

export interface SweepResult {
  kind: FleetKind;
  size: number;
  /** One sweep over the whole fleet. */
  counts: Counts;
  wallMs: number[];
  /** The first sweep: credentials not yet remembered by this process (a cold function instance). */
  firstMs: number;
  /** A sweep with the status refresh due for every proxy (observed afresh and rewritten). */
  refresh: { ms: number; counts: Counts };
  /** A sweep on a check instance with an empty sweep cache (every page read whole). */
  cold: Counts;
  /** One relay report (relay-backed fleets). */
  report?: Counts;
  failures: string[];
}

/** One source of steady-state work, already scaled to one check cycle. */
export interface CycleSource {
  name: string;
  perCycle: Counts;
  note: string;
}

export interface CycleCost {
  kind: FleetKind;
  size: number;
  checkIntervalSeconds: number;
  refreshSeconds: number;
  sources: CycleSource[];
}

async function measure(counts: Counts, run: () => Promise<void>): Promise<{ counts: Counts; ms: number }> {
  const before = { ...counts };
  const started = performance.now();
  await run();
  return { counts: diffCounts(counts, before), ms: performance.now() - started };
}

const fmtShare = (share: number) => `weighted ${Number(share.toFixed(3))}`;

function scale(c: Counts, factor: number): Counts {
  const out = zeroCounts();
  for (const key of Object.keys(out) as (keyof Counts)[]) out[key] = c[key] * factor;
  return out;
}

function add(a: Counts, b: Counts): Counts {
  const out = zeroCounts();
  for (const key of Object.keys(out) as (keyof Counts)[]) out[key] = a[key] + b[key];
  return out;
}

interface Fleet {
  env: CheckEnv;
  fleet: SeededFleet;
  seq: number;
}

async function prepare(
  kind: FleetKind,
  size: number,
  echoUrl: string,
  logDir: string,
  poolPorts: number[],
): Promise<Fleet> {
  const project = `bench-${kind}-${size}-${randomBytes(3).toString('hex')}`;
  let direct: Provider | undefined;
  if (kind === 'direct') direct = createPoolProvider(poolPorts, 'bench', Date.now() - 3600_000);
  const env = createCheckEnv(kind, project, echoUrl, join(logDir, `${project}.log`), direct);
  const fleet = await seedFleet(env, size, direct);
  return { env, fleet, seq: 1 };
}

/**
 * A sweep a status refresh (or more) on, at `at`: for a relay-backed fleet the relay's probes are
 * that much newer (so every inventory item is due for its rewrite), and the monitor's verdict is fresh.
 *
 * @returns the sweep, and the relay report that made the inventory items due
 */
async function refreshSweep(
  f: Fleet,
  at: number,
): Promise<{ sweep: Counts; ms: number; echo: Counts; report?: Counts }> {
  const { env } = f;
  let report: Counts | undefined;
  if (env.kind === 'relay') report = (await measure(env.counts, () => env.report(f.fleet.report(++f.seq, at)))).counts;
  // The monitor's verdict as it would be by then (not counted here: it is the monitor's work).
  await env.health(at);
  const shift = at - Date.now();
  env.deps.now = () => Date.now() + shift;
  try {
    const run = await measure(env.counts, () => env.sweep());
    // The next sweep reads back what this one wrote (its pages' changes): part of the refresh's cost.
    const echo = (await measure(env.counts, () => env.sweep())).counts;
    const beat = { sweep: run.counts, ms: run.ms, echo };
    return report ? { ...beat, report } : beat;
  } finally {
    delete env.deps.now;
  }
}

/**
 * Sweeps a seeded fleet: a first sweep, `repeats` measured ones, a relay report, the steady-state
 * cycle when asked, and a sweep with the status refresh due.
 */
export async function sweepFleet(
  kind: FleetKind,
  size: number,
  opts: { echoUrl: string; logDir: string; poolPorts: number[]; repeats: number; firestoreHost: string },
  steady?: (f: Fleet) => Promise<CycleCost>,
): Promise<{ sweep: SweepResult; cycle?: CycleCost }> {
  const f = await prepare(kind, size, opts.echoUrl, opts.logDir, opts.poolPorts);
  const { env } = f;
  // As in production: the monitor's verdict exists, the relay has reported (storing its digest).
  await env.health();
  if (kind === 'relay') await env.report(f.fleet.report(++f.seq, Date.now()));
  const firstMs = (await measure(env.counts, () => env.sweep())).ms;
  const wallMs: number[] = [];
  let counts = zeroCounts();
  for (let i = 0; i < opts.repeats; i++) {
    const run = await measure(env.counts, () => env.sweep());
    wallMs.push(run.ms);
    counts = run.counts;
  }
  const cold = (await measure(env.counts, () => env.coldSweep())).counts;
  let report: Counts | undefined;
  if (kind === 'relay')
    report = (await measure(env.counts, () => env.report(f.fleet.report(++f.seq, Date.now())))).counts;
  const cycle = steady ? await steady(f) : undefined;
  // Past any refresh the steady cycle already moved the fleet to.
  const refreshMs = env.config.statusRefreshSeconds * 1000;
  const beat = await refreshSweep(f, Date.now() + (steady ? 2 : 1) * (refreshMs + 5000));
  const refresh = { ms: beat.ms, counts: beat.sweep };
  const sweep: SweepResult = { kind, size, counts, wallMs, firstMs, refresh, cold, failures: [...env.failures] };
  if (report) sweep.report = report;
  await env.db.terminate();
  // The emulator keeps every project in memory: let the next fleet have it.
  await clearFirestore(opts.firestoreHost, env.config.project);
  return cycle ? { sweep, cycle } : { sweep };
}

/**
 * The steady-state cycle of a seeded fleet: a sweep and a relay report as they are most of the
 * time, the same with the status refresh due (clock moved one refresh on), the health monitor
 * and a GC pass; each scaled by how often it runs per check interval.
 */
export async function steadyCycle(f: Fleet): Promise<CycleCost> {
  const { env } = f;
  const cfg = env.config;
  const interval = cfg.checkIntervalSeconds;
  const refreshMs = cfg.statusRefreshSeconds * 1000;
  // Caches are read whole when older than SWEEP_CACHE_MAX_AGE_MS: that share of a cold run is added.
  const refills = (interval * 1000) / SWEEP_CACHE_MAX_AGE_MS;
  const coldSweep = (await measure(env.counts, () => env.coldSweep())).counts;
  const sweep = (await measure(env.counts, () => env.sweep())).counts;
  // The fleet gauges are counted on a new instance, then every FLEET_GAUGE_INTERVAL_MS.
  const coldHealth = (await measure(env.counts, () => env.coldHealth())).counts;
  const health = (await measure(env.counts, () => env.health())).counts;
  const gaugeShare = (cfg.healthIntervalSeconds * 1000) / FLEET_GAUGE_INTERVAL_MS;
  // GC's two caches are refilled at their own ages: each cold pass empties one, after a pass that
  // filled both (not measured).
  await env.gc();
  const coldOwners = (await measure(env.counts, () => env.coldGc('owners'))).counts;
  const coldInventory = (await measure(env.counts, () => env.coldGc('inventory'))).counts;
  const gc = (await measure(env.counts, () => env.gc())).counts;
  const gcRefills = (cfg.gcIntervalSeconds * 1000) / SWEEP_CACHE_MAX_AGE_MS;
  const inventoryRefills = (cfg.gcIntervalSeconds * 1000) / INVENTORY_CACHE_MAX_AGE_MS;
  const gcCold = add(
    scale(diffCounts(coldOwners, gc), gcRefills),
    scale(diffCounts(coldInventory, gc), inventoryRefills),
  );
  const sources: CycleSource[] = [];
  let reportSteady: Counts | undefined;
  if (env.kind === 'relay')
    reportSteady = (await measure(env.counts, () => env.report(f.fleet.report(++f.seq, Date.now())))).counts;
  const { sweep: beat, echo, report: reportBeat } = await refreshSweep(f, Date.now() + refreshMs + 5000);
  const share = interval / cfg.statusRefreshSeconds;
  const beatExtra = add(diffCounts(beat, sweep), diffCounts(echo, sweep));
  sources.push({
    name: 'check sweep',
    perCycle: add(add(sweep, scale(beatExtra, share)), scale(diffCounts(coldSweep, sweep), refills)),
    note: `every ${interval} s, warm; refresh-due sweep and the one after it (every ${cfg.statusRefreshSeconds} s) ${fmtShare(share)}; refill every ${SWEEP_CACHE_MAX_AGE_MS / 1000} s ${fmtShare(refills)}`,
  });
  if (reportSteady && reportBeat) {
    const perReport = add(
      reportSteady,
      scale(diffCounts(reportBeat, reportSteady), RELAY_REPORT_SECONDS / cfg.statusRefreshSeconds),
    );
    sources.push({
      name: 'relay reports',
      perCycle: scale(perReport, interval / RELAY_REPORT_SECONDS),
      note: `one relay, a report every ${RELAY_REPORT_SECONDS} s (${interval / RELAY_REPORT_SECONDS} per cycle)`,
    });
  }
  sources.push({
    name: 'provider-health monitor',
    perCycle: scale(
      add(health, scale(diffCounts(coldHealth, health), gaugeShare)),
      interval / cfg.healthIntervalSeconds,
    ),
    note: `every ${cfg.healthIntervalSeconds} s; fleet gauges counted every ${FLEET_GAUGE_INTERVAL_MS / 1000} s ${fmtShare(gaugeShare)}`,
  });
  sources.push({
    name: 'gc',
    perCycle: scale(add(gc, gcCold), interval / cfg.gcIntervalSeconds),
    note: `every ${cfg.gcIntervalSeconds} s, warm; owner refill every ${SWEEP_CACHE_MAX_AGE_MS / 1000} s ${fmtShare(gcRefills)}, inventory refill every ${INVENTORY_CACHE_MAX_AGE_MS / 1000} s ${fmtShare(inventoryRefills)}`,
  });
  return {
    kind: env.kind,
    size: f.fleet.names.length,
    checkIntervalSeconds: interval,
    refreshSeconds: cfg.statusRefreshSeconds,
    sources,
  };
}

export function totalOf(cycle: CycleCost): Counts {
  return cycle.sources.reduce((sum, s) => add(sum, s.perCycle), zeroCounts());
}
