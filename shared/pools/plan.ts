/**
 * The pool decision: given a pool, its members and the providers' health, which members to create
 * and which to drain. A pure function (plan.test.ts); the controller runs it inside a transaction
 * on the pool document, so concurrent reconciles decide one after the other.
 */
import type { ProxyDoc } from '../domain/status.js';
import { proxyNotReached } from '../probe/probe.js';
import { parseDuration } from '../domain/duration.js';
import { entryKey, memberSpec, spreadOf, templateHash, type SpreadEntry } from '../domain/pool.js';
import { NEVER_REACHABLE, type EntryStatus, type PoolDoc } from '../domain/pool-status.js';

/** The label carrying the hash of the template a member was made from. */
export const TEMPLATE_LABEL = 'egress.dev/pool-template';

/** Why a live member is to be replaced or removed. */
export type OutdatedReason = 'template' | 'maxAge' | 'dead' | 'banned' | 'entry' | 'surplus';

export interface PlanInput {
  pool: PoolDoc;
  members: ProxyDoc[];
  /** Provider name → whether the provider-health monitor's fresh verdict says it is down. */
  providerDown: (provider: string) => string | undefined;
  now: number;
  /** The first recovery delay of an entry that went out; it doubles on each relapse. */
  recoverAfterMs: number;
  /** Consecutive failed probes that make a member dead (the per-proxy `unhealthyAfter`). */
  unhealthyAfter: number;
  /** Members of one entry dying in a row without ever passing a probe after which it gets no more. */
  neverReadyLimit: number;
  /** Whether a member is marked banned (feedback from traffic); none when absent. */
  banned?: (member: ProxyDoc) => boolean;
  /** USD an hour one member on this entry costs (0: not priced), for `spec.maxCostPerHour`. */
  memberHourly?: (entry: SpreadEntry) => number;
  /** How many members the pool wants now: the autoscaler's decision; default `spec.replicas`. */
  replicas?: number;
  /** Members a gateway session in use holds: never removed as surplus while held. */
  held?: ReadonlySet<string>;
}

/** How many members the pool wants: the autoscaler's decision, else the fixed `replicas`. */
export function wantedReplicas(input: Pick<PlanInput, 'pool' | 'replicas'>): number {
  return input.replicas ?? input.pool.spec.replicas ?? input.pool.spec.autoscale?.minReplicas ?? 0;
}

export interface PlannedCreate {
  entry: SpreadEntry;
  spec: ReturnType<typeof memberSpec>;
}

export interface Plan {
  creates: PlannedCreate[];
  /** Members to drain now (deletion requested: discovery stops handing them out at once). */
  drains: { name: string; reason: OutdatedReason }[];
  entries: EntryStatus[];
  /** Members that wait for replacement (outdated, not yet drainable). */
  waiting: { name: string; reason: OutdatedReason }[];
  live: number;
  ready: number;
  updated: number;
  terminating: number;
  /** Whether the pool is at rest: exactly `replicas` current members, none outdated. */
  settled: boolean;
  /**
   * Not settled, and nothing to do until it is applied again: entries short of members stopped
   * (`NeverReachable`), or every member the caps allow is in place (`placed` < replicas).
   */
  halted: boolean;
  /** Members the spread places: `replicas`, or fewer when the entries' `maxReplicas` cannot hold them all. */
  placed: number;
  /** Set when `spec.maxCostPerHour` held members back: what the placed members would have cost an hour. */
  overBudget?: { wantedPerHourUsd: number; placedPerHourUsd: number } | undefined;
  /** The pool is being deleted and no member is left: remove its document. */
  finalise: boolean;
}

/** Serving: Ready, not being drained, not banned (what discovery hands out). */
const serving = (input: PlanInput) => (m: ProxyDoc) =>
  m.status.phase === 'Ready' && !m.deletionRequestedAt && !input.banned?.(m);
const memberKey = (m: ProxyDoc) => entryKey({ provider: m.spec.provider, placement: m.spec.placement });
const createdMs = (m: ProxyDoc) => Date.parse(m.createdAt) || 0;

/**
 * Failed, or stopped or failing its probes long enough that a lone proxy would be replaced in
 * place (the per-proxy reconcile leaves that to the pool: reason `PoolReplaces`).
 */
function isDead(m: ProxyDoc, unhealthyAfter: number): boolean {
  const phase = m.status.phase;
  return phase === 'Failed' || phase === 'Replacing' || leftToPool(m, unhealthyAfter);
}

/** Stopped or failing its probes long enough: the per-proxy reconcile left its replacement to the pool. */
function leftToPool(m: ProxyDoc, unhealthyAfter: number): boolean {
  if (m.status.conditions.some((c) => c.type === 'Ready' && c.reason === 'PoolReplaces')) return true;
  return m.status.phase === 'Unhealthy' && (m.status.health?.consecutiveFailures ?? 0) >= unhealthyAfter;
}

/**
 * The entry's count of members that died without ever passing a probe, in a row, for this pool
 * generation: by member name, so seeing one again counts it once; a member of the entry that
 * passed a probe clears it.
 */
function unreachableOf(input: PlanInput, prev: EntryStatus | undefined, onEntry: ProxyDoc[]) {
  const generation = input.pool.generation;
  if (onEntry.some((m) => m.status.instance?.passedProbe === true)) return undefined;
  const counted = prev?.unreachable?.generation === generation ? prev.unreachable.members : [];
  // As for a lone proxy (shared/reconcile/never-ready.ts): only members nobody could connect to.
  const notReached = ({ status: { health } }: ProxyDoc) =>
    health?.ok !== false || health.error === undefined || proxyNotReached(health.error);
  const dead = onEntry.filter((m) => m.status.instance && leftToPool(m, input.unhealthyAfter) && notReached(m));
  const members = [...new Set([...counted, ...dead.map((m) => m.metadata.name)])];
  return members.length > 0 ? { generation, members } : undefined;
}

/** Whether an entry stopped getting members: they were never reachable. */
const stoppedEntry = (e: EntryStatus | undefined) => e?.reason === NEVER_REACHABLE;

/** How healthy a member is, for choosing which to remove first (lower goes first). */
function healthRank(m: ProxyDoc): number {
  switch (m.status.phase) {
    case 'Failed':
      return 0;
    case 'Unhealthy':
    case 'Replacing':
      return 1;
    case 'Pending':
    case 'Provisioning':
      return 2;
    case 'Ready':
      return 3;
    default:
      return 0;
  }
}

/** Least healthy first, then newest first: the order members leave in (see docs/architecture.md). */
export function removalOrder(a: ProxyDoc, b: ProxyDoc): number {
  return healthRank(a) - healthRank(b) || createdMs(b) - createdMs(a) || b.metadata.name.localeCompare(a.metadata.name);
}

function intrinsicReason(
  m: ProxyDoc,
  input: PlanInput,
  hash: string,
  maxAgeMs: number | undefined,
): OutdatedReason | undefined {
  if (input.banned?.(m)) return 'banned';
  if (m.metadata.labels[TEMPLATE_LABEL] !== hash) return 'template';
  if (isDead(m, input.unhealthyAfter)) return 'dead';
  // A member's age is its document's (the pool creates it, and it is never recreated in place).
  if (maxAgeMs !== undefined && input.now - createdMs(m) > maxAgeMs) return 'maxAge';
  return undefined;
}

/** Delay before an entry that went out `failures` times in a row is tried again. */
function recoverDelay(failures: number, baseMs: number): number {
  return Math.min(baseMs * 2 ** Math.max(0, failures - 1), baseMs * 16);
}

/** Availability of each entry with hysteresis: out at once, back only after staying good for a while. */
function availability(input: PlanInput, entries: SpreadEntry[], keys: string[], live: ProxyDoc[]): EntryStatus[] {
  const previous = new Map(input.pool.status.entries.map((e) => [entryKey(e), e]));
  return entries.map((entry, i) => {
    const key = keys[i];
    const prev = previous.get(entryKey(entry));
    const onEntry = live.filter((m) => memberKey(m) === key);
    const down = input.providerDown(entry.provider);
    const quota = onEntry.find((m) => m.status.retry?.reason === 'QuotaExceeded');
    const unreachable = unreachableOf(
      input,
      prev,
      input.members.filter((m) => memberKey(m) === key),
    );
    const tried = unreachable?.members.length ?? 0;
    const base = {
      provider: entry.provider,
      placement: entry.placement,
      ...(entry.tier !== undefined && { tier: entry.tier }),
      ...(entry.maxReplicas !== undefined && { maxReplicas: entry.maxReplicas }),
      desired: 0,
      members: onEntry.length,
    };
    const counts = { ...base, ready: onEntry.filter(serving(input)).length, ...(unreachable && { unreachable }) };
    const bad = down
      ? { reason: 'ProviderUnhealthy', message: `provider "${entry.provider}" is unhealthy: ${down}` }
      : tried >= input.neverReadyLimit
        ? { reason: NEVER_REACHABLE, message: neverReachableMessage(entry.provider, unreachable?.members ?? []) }
        : quota
          ? { reason: 'QuotaExceeded', message: `member ${quota.metadata.name} is out of quota` }
          : undefined;
    const wasAvailable = prev?.available ?? true;
    if (bad) {
      const relapse =
        wasAvailable &&
        prev?.recoveredAt !== undefined &&
        input.now - prev.recoveredAt < recoverDelay(16, input.recoverAfterMs);
      const failures = wasAvailable ? (relapse ? (prev?.failures ?? 0) + 1 : 1) : (prev?.failures ?? 1);
      return { ...counts, available: false, ...bad, lastBadAt: input.now, failures };
    }
    // A stop for unreachable members ends with its generation: no recovery delay to wait out.
    if (!wasAvailable && prev && !stoppedEntry(prev)) {
      const wait = recoverDelay(prev.failures, input.recoverAfterMs);
      if (input.now - (prev.lastBadAt ?? 0) < wait) {
        const { desired: _d, members: _m, ready: _r, provider: _p, placement: _pl, unreachable: _u, ...rest } = prev;
        const { tier: _t, maxReplicas: _x, ...kept } = rest;
        return { ...counts, ...kept, available: false };
      }
      return { ...counts, available: true, failures: prev.failures, recoveredAt: input.now };
    }
    const kept = prev?.recoveredAt !== undefined ? { recoveredAt: prev.recoveredAt } : {};
    return { ...counts, available: true, failures: prev?.failures ?? 0, ...kept };
  });
}

function neverReachableMessage(provider: string, members: string[]): string {
  return (
    `${members.length} members on provider "${provider}" in a row never passed a probe (${members.join(', ')}); ` +
    `no more are created on this entry. Their Ready conditions say what was probed and the error; fix the ` +
    `cause (a firewall from the check function's range, the proxy port, the guest's start-up), then apply ` +
    `the pool again`
  );
}

/**
 * Places `replicas` over the entries by tier: the lowest tier's available entries fill first,
 * evenly, each up to its `maxReplicas`; what they cannot hold overflows to the next tier. When
 * `replicas` falls, the highest tiers lose their share first (drain back to the lowest). With no
 * entry available, all of them are filled the same way (members keep being tried somewhere). An
 * entry unavailable only for quota keeps the members it has that serve (`serving`). Members beyond
 * every cap are not placed: the sum falls short of `replicas`.
 */
export function shares(replicas: number, entries: EntryStatus[], good: number[], serving: number[] = good): number[] {
  const available = entries.map((e, i) => (e.available ? i : -1)).filter((i) => i >= 0);
  const open = available.length > 0 ? available : entries.map((_, i) => i);
  const desired = entries.map(() => 0);
  let left = replicas;
  // An entry out of quota takes no more members but keeps the serving ones it has: draining them
  // would move healthy proxies away for want of room for one more (and back once room is free).
  if (available.length > 0)
    entries.forEach((e, i) => {
      if (e.available || e.reason !== 'QuotaExceeded') return;
      const kept = Math.min(serving[i] ?? 0, e.maxReplicas ?? Infinity, left);
      desired[i] = kept;
      left -= kept;
    });
  const tiers = [...new Set(open.map((i) => entries[i]?.tier ?? 0))].sort((a, b) => a - b);
  for (const tier of tiers) {
    const inTier = open.filter((i) => (entries[i]?.tier ?? 0) === tier);
    left -= fill(left, inTier, entries, good, desired);
    if (left === 0) break;
  }
  return desired;
}

/**
 * Holds members back while the placed ones would cost more than `max` an hour: one at a time from
 * the highest tier, the dearest entry in it first (what overflowed goes before what fills first).
 * Unpriced members cost 0 here.
 */
function withinBudget(
  desired: number[],
  entries: SpreadEntry[],
  max: number | undefined,
  price: ((entry: SpreadEntry) => number) | undefined,
): { desired: number[]; overBudget?: { wantedPerHourUsd: number; placedPerHourUsd: number } } {
  if (max === undefined || !price) return { desired };
  const each = entries.map((e) => price(e));
  const total = (d: number[]) => d.reduce((s, n, i) => s + n * (each[i] ?? 0), 0);
  const wanted = total(desired);
  const out = [...desired];
  while (total(out) > max) {
    const dearest = out
      .map((_, i) => i)
      .filter((i) => (out[i] ?? 0) > 0 && (each[i] ?? 0) > 0)
      .sort((a, b) => (entries[b]?.tier ?? 0) - (entries[a]?.tier ?? 0) || (each[b] ?? 0) - (each[a] ?? 0) || b - a)[0];
    if (dearest === undefined) break;
    out[dearest]!--;
  }
  return wanted > max
    ? { desired: out, overBudget: { wantedPerHourUsd: wanted, placedPerHourUsd: total(out) } }
    : { desired: out };
}

/**
 * Gives up to `amount` members to `indices` one at a time, each to the entry with the fewest so far
 * that is below its cap: an even split. Ties go to the entry that already holds the most members
 * (no churn to even it out), then to the earlier entry.
 *
 * @returns how many were placed
 */
function fill(amount: number, indices: number[], entries: EntryStatus[], good: number[], desired: number[]): number {
  let placed = 0;
  const room = (i: number) => (entries[i]?.maxReplicas ?? Infinity) - (desired[i] ?? 0);
  while (placed < amount) {
    const candidates = indices.filter((i) => room(i) > 0);
    if (candidates.length === 0) break;
    const next = candidates.reduce((best, i) => {
      const d = (desired[i] ?? 0) - (desired[best] ?? 0);
      return d < 0 || (d === 0 && (good[i] ?? 0) > (good[best] ?? 0)) ? i : best;
    });
    desired[next]!++;
    placed++;
  }
  return placed;
}

export function planPool(input: PlanInput): Plan {
  const { pool } = input;
  const spec = pool.spec;
  const live = input.members.filter((m) => !m.deletionRequestedAt);
  const terminating = input.members.length - live.length;
  const isReady = serving(input);
  const ready = live.filter(isReady).length;
  const entries = spreadOf(spec);
  const hash = templateHash(spec.template);
  const maxAgeMs = spec.template.spec.maxAge ? parseDuration(spec.template.spec.maxAge) : undefined;
  const keys = entries.map((e) =>
    entryKey({ provider: e.provider, placement: memberSpec(spec.template, e).placement }),
  );
  const statuses = availability(input, entries, keys, live);
  const base = { entries: statuses, live: live.length, ready, terminating };

  if (pool.deletionRequestedAt) {
    const drains = live.map((m) => ({ name: m.metadata.name, reason: 'surplus' as const }));
    return {
      ...base,
      creates: [],
      drains,
      waiting: [],
      updated: 0,
      settled: false,
      halted: false,
      placed: 0,
      finalise: input.members.length === 0,
    };
  }

  const outdated = new Map<string, OutdatedReason>();
  const good: ProxyDoc[][] = entries.map(() => []);
  for (const m of live) {
    const why = intrinsicReason(m, input, hash, maxAgeMs);
    const at = keys.indexOf(memberKey(m));
    if (why) outdated.set(m.metadata.name, why);
    else if (at < 0) outdated.set(m.metadata.name, 'entry');
    else good[at]!.push(m);
  }
  const wanted = wantedReplicas(input);
  const placedByTier = shares(
    wanted,
    statuses,
    good.map((g) => g.length),
    good.map((g) => g.filter(isReady).length),
  );
  const { desired, overBudget } = withinBudget(placedByTier, entries, spec.maxCostPerHour, input.memberHourly);
  let keptHeld = 0;
  const current: ProxyDoc[][] = good.map((members, i) => {
    const keep = desired[i] ?? 0;
    if (members.length <= keep) return members;
    // A member a session in use holds stays (over its share) until the session lets it go.
    const free = members.filter((m) => !input.held?.has(m.metadata.name));
    const leaving = free.sort(removalOrder).slice(0, members.length - keep);
    keptHeld += members.length - keep - leaving.length;
    for (const m of leaving) outdated.set(m.metadata.name, 'surplus');
    return members.filter((m) => !leaving.includes(m));
  });
  statuses.forEach((s, i) => (s.desired = desired[i] ?? 0));
  const currentCount = current.reduce((n, c) => n + c.length, 0);

  const stopped = (m: ProxyDoc) => stoppedEntry(statuses[keys.indexOf(memberKey(m))]);
  const open = desired.map((d, i) => (stoppedEntry(statuses[i]) ? 0 : d));
  const { creates, blocked } = planCreates(input, entries, current, open, isReady);
  // Members the caps or the budget do not place (`shares` and `withinBudget` never place more than
  // `wanted`) are not waited for before a surplus one drains.
  const placed = desired.reduce((n, d) => n + d, 0);
  const { drains, waiting } = planDrains(input, placed, live, outdated, current, blocked, isReady, stopped);
  const updated = live.filter((m) => m.metadata.labels[TEMPLATE_LABEL] === hash).length;
  // Held members kept over their share do not count against settling at the wanted size.
  const placedNow = currentCount - keptHeld;
  const settled = creates.length === 0 && outdated.size === 0 && placedNow === wanted;
  const atCaps = placed < wanted && outdated.size === 0 && placedNow === placed;
  const halted = !settled && creates.length === 0 && drains.length === 0 && (statuses.some(stoppedEntry) || atCaps);
  return { ...base, creates, drains, waiting, updated, settled, halted, placed, overBudget, finalise: false };
}

/**
 * Creates: fill each entry's deficit, never above replicas + maxSurge members. Draining members
 * count (their instances run until deleted), except on a down provider: their deletion waits for
 * it, and counting them would hold the failover hostage to the outage.
 *
 * @returns the creates, and whether the pool is `blocked`: no room to surge (maxSurge 0, or every
 * extra slot taken by live members) and no new member coming up that could cover, so outdated
 * members are replaced in place, within minAvailable. Room taken by draining members is not "no
 * room": it frees once they are deleted.
 */
function planCreates(
  input: PlanInput,
  entries: SpreadEntry[],
  current: ProxyDoc[][],
  desired: number[],
  isReady: (m: ProxyDoc) => boolean,
): { creates: PlannedCreate[]; blocked: boolean } {
  const spec = input.pool.spec;
  const replicas = wantedReplicas(input);
  const live = input.members.filter((m) => !m.deletionRequestedAt);
  const creates: PlannedCreate[] = [];
  const occupying = input.members.filter((m) => !m.deletionRequestedAt || !input.providerDown(m.spec.provider));
  let room = replicas + spec.maxSurge - occupying.length;
  const deficits = current.map((c, i) => Math.max(0, (desired[i] ?? 0) - c.length));
  const currentCount = current.reduce((n, c) => n + c.length, 0);
  const currentReadyCount = current.reduce((n, c) => n + c.filter(isReady).length, 0);
  const liveRoom = replicas + spec.maxSurge - live.length;
  const blocked = liveRoom <= 0 && deficits.some((d) => d > 0) && currentReadyCount === currentCount;
  while (room > 0 && deficits.some((d) => d > 0)) {
    for (let i = 0; i < entries.length && room > 0; i++) {
      if ((deficits[i] ?? 0) <= 0) continue;
      deficits[i]!--;
      room--;
      const entry = entries[i] as SpreadEntry;
      creates.push({ entry, spec: memberSpec(spec.template, entry) });
    }
  }
  return { creates, blocked };
}

/**
 * Drains: an outdated member goes once what replaces it is Ready (the current Ready members and
 * the outdated ones left still cover `target`: replicas, or fewer when the caps or the budget
 * place fewer), and never below minAvailable Ready members (at most `target`);
 * when `blocked`, in place (what maxSurge 0 asks for), still within minAvailable.
 */
function planDrains(
  input: PlanInput,
  target: number,
  live: ProxyDoc[],
  outdated: Map<string, OutdatedReason>,
  current: ProxyDoc[][],
  blocked: boolean,
  isReady: (m: ProxyDoc) => boolean,
  onStoppedEntry: (m: ProxyDoc) => boolean,
): Pick<Plan, 'drains' | 'waiting'> {
  const minAvailable = Math.min(input.pool.spec.minAvailable ?? target, target);
  const currentReadyCount = current.reduce((n, c) => n + c.filter(isReady).length, 0);
  const candidates = live.filter((m) => outdated.has(m.metadata.name)).sort(removalOrder);
  const drained = new Set<string>();
  let left = candidates.length;
  let readyLeft = live.filter(isReady).length;
  const pass = (allowed: () => boolean) => {
    for (const m of candidates) {
      if (drained.has(m.metadata.name)) continue;
      const wasReady = isReady(m);
      if (!allowed() || (wasReady && readyLeft - 1 < minAvailable)) continue;
      drained.add(m.metadata.name);
      left--;
      if (wasReady) readyLeft--;
    }
  };
  // Nothing will replace a member of an entry that stopped getting members: one not Ready goes at once.
  for (const m of candidates)
    if (!isReady(m) && onStoppedEntry(m)) {
      drained.add(m.metadata.name);
      left--;
    }
  pass(() => currentReadyCount + (left - 1) >= target);
  // Nothing could go and nothing can come: replace in place.
  if (drained.size === 0 && blocked) pass(() => true);
  const listed = (m: ProxyDoc) => ({ name: m.metadata.name, reason: outdated.get(m.metadata.name) as OutdatedReason });
  return {
    drains: candidates.filter((m) => drained.has(m.metadata.name)).map(listed),
    waiting: candidates.filter((m) => !drained.has(m.metadata.name)).map(listed),
  };
}
