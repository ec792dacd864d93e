/** The pool verbs: `get pools`, `describe pool`, `delete pool [--wait]`, `scale pool --replicas N [--wait]`. */
import { setTimeout as sleep } from 'node:timers/promises';
import { poolApplySchema, type PoolSpec } from '../shared/domain/pool.js';
import { toValidationError } from '../shared/domain/proxy.js';
import { canonicalJson } from '../shared/domain/spec-hash.js';
import type { ApiClient } from './api-client.js';
import type { ApiPool } from '../shared/api/schema.js';
import { usd } from '../shared/cost/usd.js';
import type { UsageTotals } from '../shared/domain/usage.js';
import type { GetOutput } from './command.js';
import { NONE, age, alignRows, toJson, toYaml } from './format.js';
import { WaitError, type ProgressOutput } from './wait.js';

const POOL_HEADER = ['NAME', 'REPLICAS', 'READY', 'UP-TO-DATE', 'DEMAND', 'SPREAD', 'AGE'];

/** Members the pool wants: the autoscaler's decision (status.desiredReplicas), else `spec.replicas`. */
const wanted = (p: ApiPool) => p.status.desiredReplicas ?? p.spec.replicas ?? 0;

/** `6 in flight, 2 waiting, 3.5/s (2 gateways)` for an autoscaled pool; none for a fixed one. */
function demandCell(p: ApiPool): string {
  const d = p.status.demand;
  if (!p.spec.autoscale || !d) return NONE;
  const waiting = d.waiting > 0 ? `, ${d.waiting} waiting` : '';
  return `${d.inFlight} in flight${waiting}, ${d.startedPerSecond}/s (${d.gateways} gw)`;
}

/** An entry's tier, when it is not the first: `local-b t1`. */
const tierOf = (e: { tier?: number | undefined }) => (e.tier ? ` t${e.tier}` : '');

/** `local 3/3, local-b t1 3/3`: each entry (and its tier) with its Ready members over its share ("out" when unavailable). */
function spreadCell(p: ApiPool): string {
  if (p.status.entries.length === 0) return NONE;
  return p.status.entries
    .map((e) => `${e.provider}${tierOf(e)} ${e.ready}/${e.desired}${e.available ? '' : ' (out)'}`)
    .join(', ');
}

/** The pool's running cost an hour, `+?` when some members are not priced. */
function costCell(p: ApiPool): string {
  const cost = p.status.cost;
  if (!cost) return NONE;
  return `${usd(cost.perHourUsd)}${cost.unpriced.length > 0 ? '+?' : ''}`;
}

/** USD per GiB carried over the last 24 h (instance-hours and Internet egress over the bytes); none before any traffic. */
function perGibCell(p: ApiPool): string {
  const v = p.status.usage?.last24h.perGibUsd;
  return v === undefined ? NONE : usd(v);
}

/** USD per 1,000 answered requests over the last 24 h; none before any request was answered. */
function perThousandCell(p: ApiPool): string {
  const v = p.status.usage?.last24h.perThousandSucceededUsd;
  return v === undefined ? NONE : usd(v);
}

/** `1.50 GiB` */
const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(2)} GiB`;

/** One line of usage: its counts, then what it cost. */
function usageLine(u: UsageTotals): string {
  return (
    `${u.requests} requests, ${u.succeeded} answered, ${gib(u.bytesIn)} in, ${gib(u.bytesOut)} out; ` +
    `instances ${usd(u.instanceUsd)}, egress ${usd(u.egressUsd)}`
  );
}

/** The `Usage:` lines of `describe pool`: the last 24 h with its cost per GiB and per 1,000 answered requests, and the total. */
function usageLines(p: ApiPool): string[] {
  const u = p.status.usage;
  if (!u) return [`Usage:         ${NONE} (no gateway has reported any)`];
  return [
    `Usage (24 h):  ${usageLine(u.last24h)}`,
    `  per GiB: ${perGibCell(p)}, per 1,000 answered: ${perThousandCell(p)} (as of ${new Date(u.foldedAt).toISOString()})`,
    `  since ${new Date(u.total.since).toISOString()}: ${usageLine(u.total)}`,
  ];
}

/** The `Cost:` lines of `describe pool`: per hour, by kind of member, and what is not priced. */
function costLines(p: ApiPool): string[] {
  const cost = p.status.cost;
  if (!cost) return [`Cost:          ${NONE} (not priced yet)`];
  return [
    `Cost:          ${usd(cost.perHourUsd)} an hour (prices of ${cost.pricesOf})`,
    ...cost.lines.map((l) => `  ${l.what}: ${l.members} members, ${usd(l.perHourUsd)}/h`),
    ...cost.unpriced.map((u) => `  not priced: ${u}`),
    ...(p.spec.maxCostPerHour !== undefined ? [`  maxCostPerHour: ${usd(p.spec.maxCostPerHour)}`] : []),
  ];
}

/** Pools in one of the `get` formats (JSON and YAML as the API answers them). */
export function formatPools(pools: readonly ApiPool[], output: GetOutput, now: number, single = false): string {
  const plain = pools.map(({ events: _e, ...p }) => p);
  if (output === 'json') return toJson(single ? plain[0] : { items: plain });
  if (output === 'yaml') return toYaml(single ? plain[0] : { items: plain });
  const wide = output === 'wide';
  const rows = pools.map((p) => [
    p.metadata.name,
    `${p.status.replicas}/${wanted(p)}`,
    String(p.status.readyReplicas),
    String(p.status.updatedReplicas),
    demandCell(p),
    spreadCell(p),
    age(p.metadata.createdAt, now),
    ...(wide ? [costCell(p), perGibCell(p), perThousandCell(p)] : []),
  ]);
  const header = wide ? [...POOL_HEADER, 'COST/H', 'COST/GIB', 'COST/1K-OK'] : POOL_HEADER;
  return `${alignRows([header, ...rows]).join('\n')}\n`;
}

function indented(title: string, header: string[], rows: string[][]): string[] {
  if (rows.length === 0) return [`${title}: ${NONE}`];
  return [`${title}:`, ...alignRows([header, header.map((h) => '-'.repeat(h.length)), ...rows]).map((l) => `  ${l}`)];
}

/** One pool for people: its spec, its members by spread entry, conditions and events (oldest first). */
export function describePool(p: ApiPool, now: number): string {
  const spec = p.spec;
  const lines = [
    `Name:          ${p.metadata.name}`,
    `Replicas:      ${wanted(p)} wanted, ${p.status.replicas} live, ${p.status.readyReplicas} Ready, ${p.status.updatedReplicas} up to date`,
    ...(spec.autoscale
      ? [
          `Autoscale:     ${spec.autoscale.minReplicas}–${spec.autoscale.maxReplicas}, target ${canonicalJson(spec.autoscale.target)}`,
          `Demand:        ${demandCell(p)}`,
        ]
      : []),
    `Min Available: ${spec.minAvailable ?? wanted(p)}`,
    `Max Surge:     ${spec.maxSurge ?? 1}`,
    `Template:      provider ${spec.template.spec.provider}`,
    `Created:       ${p.metadata.createdAt ?? NONE} (${age(p.metadata.createdAt, now)} ago)`,
  ];
  if (p.metadata.deletionRequestedAt) lines.push(`Deleting:      ${p.metadata.deletionRequestedAt}`);
  lines.push(...costLines(p), ...usageLines(p));
  const entries =
    p.status.entries.length > 0
      ? p.status.entries
      : (spec.spread ?? []).map((e) => ({ ...e, desired: 0, ready: 0, members: 0, available: true }));
  lines.push('Spread:');
  entries.forEach((e, i) => {
    const state = e.available ? 'available' : `out: ${'message' in e ? (e.message ?? '') : ''}`;
    const placing = [e.tier ? `tier ${e.tier}` : '', e.maxReplicas !== undefined ? `at most ${e.maxReplicas}` : '']
      .filter(Boolean)
      .join(', ');
    const where = placing ? ` (${placing})` : '';
    lines.push(`  [${i}] ${e.provider}${where}: ${e.ready} Ready of ${e.members} live, share ${e.desired} (${state})`);
    const members = p.members.filter((m) => m.entry === i);
    for (const m of members)
      lines.push(
        `      ${m.name}   ${m.draining ? 'Draining' : m.phase}   ${m.address ?? NONE}   ${m.egressIp ?? NONE}   ${age(m.createdAt, now)}`,
      );
  });
  const stray = p.members.filter((m) => m.entry < 0);
  if (stray.length > 0) {
    lines.push('  (entries no longer in spread):');
    for (const m of stray) lines.push(`      ${m.name}   ${m.draining ? 'Draining' : m.phase}   ${m.provider}`);
  }
  lines.push(
    ...indented(
      'Conditions',
      ['Type', 'Status', 'Reason', 'Age', 'Message'],
      p.status.conditions.map((c) => [c.type, c.status, c.reason || NONE, age(c.lastTransitionTime, now), c.message]),
    ),
    ...indented(
      'Events',
      ['Type', 'Reason', 'Age', 'Message'],
      [...p.events].reverse().map((e) => [e.type, e.reason, age(e.at, now), e.message]),
    ),
  );
  return `${lines.join('\n')}\n`;
}

/**
 * Whether a pool is at rest with the spec that was applied (`want`, as validated: defaults set):
 * that spec recorded, its `replicas` members all Ready and current, none being drained.
 */
export function poolSettled(p: ApiPool, want: PoolSpec): boolean {
  return (
    canonicalJson(p.spec) === canonicalJson(want) &&
    p.members.length === (want.replicas ?? p.status.desiredReplicas) &&
    p.status.observedGeneration >= (p.metadata.generation ?? 0) &&
    p.members.every((m) => m.phase === 'Ready' && !m.draining) &&
    p.status.conditions.some((c) => c.type === 'Progressing' && c.status === 'False')
  );
}

export interface PoolWaitOptions {
  timeoutMs: number;
  intervalMs: number;
  signal?: AbortSignal | undefined;
  now: () => number;
}

/**
 * Polls until the pool is settled with the spec `want` (or gone, for `undefined`), printing a line
 * each time its state changes. A pool not found while `want` is set is not recorded yet (requests
 * are applied asynchronously): the wait goes on until the timeout.
 *
 * @throws WaitError on timeout, naming what the pool still lacks
 */
export async function waitForPool(
  client: ApiClient,
  out: ProgressOutput,
  name: string,
  want: PoolSpec | undefined,
  options: PoolWaitOptions,
): Promise<void> {
  const deadline = options.now() + options.timeoutMs;
  let last = '';
  for (;;) {
    const pool = await client.getPool(name);
    const state = !pool
      ? want
        ? 'not recorded yet'
        : 'gone'
      : `${pool.status.readyReplicas} Ready, ${pool.members.length} members (${pool.members.filter((m) => m.draining).length} draining), ${want?.replicas ?? pool.status.desiredReplicas ?? 0} wanted`;
    if (state !== last) out.write(`pool/${name}: ${state}\n`);
    last = state;
    if (want === undefined ? !pool : pool !== undefined && poolSettled(pool, want)) return;
    if (options.now() >= deadline) throw new WaitError(`pool/${name}: timed out: ${state}`);
    await sleep(options.intervalMs, undefined, options.signal ? { signal: options.signal } : {});
  }
}

/**
 * `egress scale pool NAME --replicas N`: applies the pool as stored with `replicas` N (and
 * `minAvailable` lowered to N when it was above).
 *
 * @returns the note to print
 */
export async function scalePool(
  client: ApiClient,
  name: string,
  replicas: number,
): Promise<{ note: string; spec: PoolSpec }> {
  const pool = await client.getPool(name);
  if (!pool) throw new Error(`pool "${name}" not found`);
  const { members: _m, events: _e, status: _s, ...rest } = pool;
  const spec = { ...rest.spec, replicas };
  const lowered = spec.minAvailable !== undefined && spec.minAvailable > replicas;
  if (lowered) spec.minAvailable = replicas;
  const body = { apiVersion: rest.apiVersion, kind: rest.kind, metadata: { name, labels: rest.metadata.labels }, spec };
  // The API answers with loose shapes; the request is checked against the schema the API applies.
  const parsed = poolApplySchema.safeParse({ ...body, action: 'apply' });
  if (!parsed.success) throw toValidationError(parsed.error);
  await client.applyPool(parsed.data);
  return {
    note: `pool/${name} scaled to ${replicas}${lowered ? ` (minAvailable lowered to ${replicas})` : ''}\n`,
    spec: parsed.data.spec,
  };
}
