/**
 * Folds the gateways' usage documents into a pool's `status.usage` (docs/api.md "Usage and cost
 * per GiB"): a pure decision, run inside the pool's reconcile transaction, so each count is added
 * once however often a document is read, and its instance-hours and egress priced.
 */
import { countedOf, usageOfDoc, type StoredDemand } from '../store/demand-rules.js';
import {
  addCounts,
  maxCounts,
  subtractCounts,
  ZERO_USAGE,
  type FoldedMark,
  type HourLevel,
  type Levels,
  type PoolUsage,
  type UsageCounts,
  type UsageFigures,
  type UsageHour,
  type UsageTotals,
} from '../domain/usage.js';

const HOUR_MS = 3_600_000;
const GIB = 2 ** 30;
/** Whole hours kept in `hours`: the current one and the 23 before it. */
const HOURS_KEPT = 24;
/**
 * Gateway documents counted per pool (marks in `status.usage.folded`): bounds the pool's document,
 * whatever number of gateway ids a `discover` token reports under.
 */
export const MAX_GATEWAYS_COUNTED = 256;

export interface FoldInput {
  previous: PoolUsage | undefined;
  /** The pool's gateway documents (`poolDemand/{pool}.*`), as read before the transaction. */
  docs: readonly StoredDemand[];
  /** USD an hour the members cost since the last fold (`status.cost` as the last reconcile priced them). */
  perHourUsd: number;
  /** USD a GiB carried costs in Internet egress (the catalogue's rate, for the share of members that are cloud VMs). */
  egressPerGibUsd: number;
  now: number;
  /** At most one fold this often (a write of the pool's document). */
  everyMs: number;
}

export interface FoldResult {
  /** The next `status.usage` (the previous one when no fold was due or there is nothing to count yet). */
  usage: PoolUsage | undefined;
  /** Counts were added by this fold: the next interval looks again, for what came after. */
  counted: boolean;
  /** Counts wait for a fold that is not due yet: when it is (ms from now). */
  dueInMs?: number;
}

const ZERO_TOTALS: UsageTotals = { ...ZERO_USAGE, instanceUsd: 0, egressUsd: 0 };

function addTotals(a: UsageTotals, b: UsageTotals): UsageTotals {
  return { ...addCounts(a, b), instanceUsd: a.instanceUsd + b.instanceUsd, egressUsd: a.egressUsd + b.egressUsd };
}

/**
 * The documents a fold counts: every one the pool has a mark for, then the newest others while
 * fewer than {@link MAX_GATEWAYS_COUNTED} are marked. One left out keeps its counts for a later
 * fold; never dropping a mark of a document still there is what keeps it from being counted twice.
 */
function countable(previous: PoolUsage | undefined, docs: readonly StoredDemand[]): StoredDemand[] {
  const marked = docs.filter((d) => previous?.folded[d.gateway] !== undefined);
  const others = docs.filter((d) => previous?.folded[d.gateway] === undefined).sort((a, b) => b.at - a.at);
  return [...marked, ...others.slice(0, Math.max(0, MAX_GATEWAYS_COUNTED - marked.length))];
}

/** The counts not yet counted in each document, and the marks that count them. */
function uncounted(
  previous: PoolUsage | undefined,
  docs: readonly StoredDemand[],
): { delta: UsageCounts; marks: Record<string, FoldedMark> } {
  let delta = ZERO_USAGE;
  const marks: Record<string, FoldedMark> = {};
  for (const d of countable(previous, docs)) {
    const counted = countedOf(d, previous?.folded[d.gateway]);
    const total = usageOfDoc(d);
    // Never below zero: a document read before a concurrent fold counted it adds nothing.
    delta = addCounts(delta, subtractCounts(total, counted));
    marks[d.gateway] = { first: d.first ?? d.at, ...maxCounts(total, counted) };
  }
  return { delta, marks };
}

/** The start of the UTC hour `at` is in. */
const hourOf = (at: number) => Math.floor(at / HOUR_MS) * HOUR_MS;

/** The oldest hour kept at `now`: {@link HOURS_KEPT} whole hours, the current one included. */
const oldestKept = (now: number) => hourOf(now) - (HOURS_KEPT - 1) * HOUR_MS;

/** The milliseconds of `[from, to)` in each whole UTC hour it spans, from `oldest` on. */
function hourSpans(from: number, to: number, oldest: number): Map<number, number> {
  const out = new Map<number, number>();
  for (let at = Math.max(from, oldest); at < to;) {
    const end = Math.min(to, hourOf(at) + HOUR_MS);
    out.set(hourOf(at), end - at);
    at = end;
  }
  return out;
}

/** `t` added to the totals of `hour` (made when missing), its levels kept. */
function addToHour(hours: Map<number, UsageHour>, hour: number, t: UsageTotals): void {
  const h = hours.get(hour) ?? { hour, ...ZERO_TOTALS };
  hours.set(hour, { ...h, ...addTotals(h, t) });
}

/** The hours of `previous` still kept at `now`, by their start. */
function keptHours(previous: readonly UsageHour[], now: number): Map<number, UsageHour> {
  const oldest = oldestKept(now);
  return new Map(previous.filter((h) => h.hour >= oldest).map((h) => [h.hour, h]));
}

/** The hours oldest first, and their sum with its cost per GiB and per 1,000 answered requests. */
function summed(hours: Map<number, UsageHour>): Pick<PoolUsage, 'hours' | 'last24h'> {
  const sorted = [...hours.values()].sort((a, b) => a.hour - b.hour);
  return { hours: sorted, last24h: figuresOf(sorted.reduce<UsageTotals>((s, h) => addTotals(s, h), ZERO_TOTALS)) };
}

/** Totals with what they cost per GiB carried and per 1,000 answered requests. */
export function figuresOf(t: UsageTotals): UsageFigures {
  const usd = t.instanceUsd + t.egressUsd;
  const gib = (t.bytesIn + t.bytesOut) / GIB;
  return {
    ...t,
    ...(gib > 0 && { perGibUsd: usd / gib }),
    ...(t.succeeded > 0 && { perThousandSucceededUsd: (usd / t.succeeded) * 1000 }),
  };
}

/**
 * The pool's usage after counting what its gateway documents hold beyond their marks, and the
 * members' cost since the last fold; at most one fold every `everyMs`.
 */
export function foldUsage(input: FoldInput): FoldResult {
  const { previous, now } = input;
  const { delta, marks } = uncounted(previous, input.docs);
  const pending = delta.requests + delta.succeeded + delta.bytesIn + delta.bytesOut > 0;
  // Nothing to count yet: a pool no gateway used has no usage (and costs no write for it).
  if (!previous && !pending) return { usage: undefined, counted: false };
  if (previous && now - previous.foldedAt < input.everyMs)
    return { usage: previous, counted: false, ...(pending && { dueInMs: previous.foldedAt + input.everyMs - now }) };
  // Without new counts only the instance-hours move: once an hour is enough (the sweep reconciles
  // every pool every check interval, and each fold is a write).
  if (previous && !pending && now - previous.foldedAt < HOUR_MS) return { usage: previous, counted: false };
  const hours = keptHours(previous?.hours ?? [], now);
  const egressUsd = ((delta.bytesIn + delta.bytesOut) / GIB) * input.egressPerGibUsd;
  const added: UsageTotals = { ...delta, instanceUsd: 0, egressUsd };
  addToHour(hours, hourOf(now), added);
  const from = previous?.foldedAt ?? now;
  const instanceUsd = (input.perHourUsd * (now - from)) / HOUR_MS;
  if (input.perHourUsd > 0)
    for (const [hour, ms] of hourSpans(from, now, oldestKept(now)))
      addToHour(hours, hour, { ...ZERO_TOTALS, instanceUsd: (input.perHourUsd * ms) / HOUR_MS });
  const total = addTotals(previous?.total ?? ZERO_TOTALS, { ...added, instanceUsd });
  return {
    usage: {
      ...previous,
      total: { ...total, since: previous?.total.since ?? now },
      ...summed(hours),
      folded: marks,
      foldedAt: now,
    },
    counted: pending,
  };
}

/** `level` after `value` was held for `seconds` of its hour (0: only seen). */
function held(level: HourLevel | undefined, value: number, seconds: number): HourLevel {
  const before = level ?? { peak: 0, mean: 0, seconds: 0 };
  const observed = before.seconds + seconds;
  return {
    peak: Math.max(before.peak, value),
    mean: observed > 0 ? (before.mean * before.seconds + value * seconds) / observed : 0,
    // At most the hour: a clock that stepped back cannot make it longer.
    seconds: Math.min(HOUR_MS / 1000, observed),
  };
}

/**
 * `usage` with its hours following the pool's levels (Ready members, demand): the levels last
 * observed are added to each hour they were held in (its peak and time-weighted mean) when they
 * change or a new hour begins, and the new ones count toward the current hour's peak. At most once
 * every `everyMs` within an hour (each is a write of the pool's document, and demand moves with
 * every report): a change sooner waits, counted as held until then. Levels unchanged within the
 * hour leave `usage` as it was; a pool no gateway used yet has no usage to follow.
 */
export function trackLevels(
  usage: PoolUsage | undefined,
  levels: Levels,
  now: number,
  everyMs: number,
): PoolUsage | undefined {
  if (!usage) return usage;
  const last = usage.levels;
  const sameHour = last !== undefined && hourOf(last.at) === hourOf(now);
  const same = last && last.members === levels.members && last.demand === levels.demand;
  if (sameHour && (same || now - last.at < everyMs)) return usage;
  const hours = keptHours(usage.hours, now);
  const level = (h: UsageHour, value: Levels, seconds: number): UsageHour => ({
    ...h,
    members: held(h.members, value.members, seconds),
    demand: held(h.demand, value.demand, seconds),
  });
  if (last)
    for (const [hour, ms] of hourSpans(last.at, now, oldestKept(now)))
      hours.set(hour, level(hours.get(hour) ?? { hour, ...ZERO_TOTALS }, last, ms / 1000));
  const current = hourOf(now);
  hours.set(current, level(hours.get(current) ?? { hour: current, ...ZERO_TOTALS }, levels, 0));
  return { ...usage, ...summed(hours), levels: { ...levels, at: now } };
}
