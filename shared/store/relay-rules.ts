/**
 * The relay report rules, once: report ordering, the inventory diff, probe heartbeats, the
 * recent-changes record and what an inventory read since a mark reads. Pure functions of what was
 * read (`readInventorySince` only orders a store's reads by them); the Firestore and in-memory relay
 * repositories only read, call these, and write what they return.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { canonicalJson } from '../domain/spec-hash.js';
import type { CommandResult, InventoryItem, RelayReport } from '../wire/protocol.js';
import type { InventoryRead } from './ports.js';
import { parseJsonAs, type CommandDoc, type InventoryMark, type RelayDoc } from './records.js';

const changesSchema = z.record(z.string(), z.number());
/** Changes are kept a heartbeat and this long (relay clocks may drift from the functions'). */
const CHANGES_SLACK_MS = 300_000;
/** More recent changes than this are recorded as one: every item changed (`*`). */
const MAX_CHANGES = 2000;
/** Firestore writes of one batch at most; a report's inventory is whole only when one batch holds it. */
export const BATCH_SIZE = 400;

function parseChanges(json: string | undefined): Record<string, number> | undefined {
  return parseJsonAs(changesSchema, json);
}

/** The oldest change a report sent at `at` keeps: older entries are dropped a heartbeat (and some slack) later. */
function keptFrom(at: number, heartbeatMs: number): number {
  return at - heartbeatMs - CHANGES_SLACK_MS;
}

/**
 * The recent changes after a report sent at `at` changed (or removed) `changed`: older entries
 * are dropped (`keptFrom`). Without a record of earlier changes (a first report, or one stored
 * before changes were recorded), every item counts as changed now. Past `MAX_CHANGES` entries the
 * oldest are folded into `*` (every item may have changed up to the newest of them): a fleet
 * changing faster only shortens how far back the record answers.
 */
export function recordChanges(
  previous: string | undefined,
  changed: Set<string>,
  at: number,
  heartbeatMs: number,
): string {
  const known = parseChanges(previous) ?? { '*': at };
  const kept: Record<string, number> = {};
  for (const [name, t] of Object.entries(known)) if (t >= keptFrom(at, heartbeatMs)) kept[name] = t;
  for (const name of changed) kept[name] = at;
  const entries = Object.entries(kept).filter(([name]) => name !== '*');
  if (entries.length < MAX_CHANGES) return JSON.stringify(kept);
  entries.sort((a, b) => b[1] - a[1]);
  const folded = entries.slice(MAX_CHANGES - 1);
  const all = Math.max(kept['*'] ?? Number.NEGATIVE_INFINITY, ...folded.map(([, t]) => t));
  return JSON.stringify({ ...Object.fromEntries(entries.slice(0, MAX_CHANGES - 1)), '*': all });
}

/**
 * Whether an inventory item may have changed since `sinceMs` (the relay's clock, like the report
 * times the changes carry). True when the relay document records no changes to go by.
 */
export function changedSince(doc: RelayDoc | undefined): (instance: string, sinceMs: number) => boolean {
  const changes = parseChanges(doc?.changes);
  if (!changes) return () => true;
  const any = changes['*'] ?? Number.NEGATIVE_INFINITY;
  return (instance, sinceMs) => Math.max(changes[instance] ?? Number.NEGATIVE_INFINITY, any) >= sinceMs;
}

/**
 * From when the changes a report stores are complete (`RelayDoc.changesFrom`): from the oldest
 * entry kept. Within one boot it never moves back, and a report whose clock went back moves it past
 * the report time before: an inventory read marked then must not trust changes stamped earlier
 * than its mark after the fact. (A read marked in another boot reads whole anyway.)
 */
function changesFrom(prev: RelayDoc | undefined, report: RelayReport, heartbeatMs: number): number {
  const from = keptFrom(report.sentAt, heartbeatMs);
  if (prev?.bootId !== report.bootId) return from;
  const wentBack = report.sentAt < prev.sentAt ? prev.sentAt + 1 : from;
  return Math.max(from, prev.changesFrom ?? from, wentBack);
}

/**
 * The inventory items that may have changed since an inventory read marked `since`
 * (`RelayRepository.inventorySince`), from the relay document's recent changes; undefined when the
 * changes cannot tell and the whole inventory must be read: no mark, another boot, a clock that
 * went back, changes not kept as far back as the mark (`changesFrom`), or every item changed (`*`)
 * since. The items the marked report itself changed are included: its writes may have landed after
 * that read (a report stored in several batches writes the relay document first).
 */
export function changedAfter(doc: RelayDoc, since: InventoryMark | undefined): string[] | undefined {
  if (!since || since.bootId !== doc.bootId || doc.sentAt < since.sentAt) return undefined;
  const changes = parseChanges(doc.changes);
  if (!changes || doc.changesFrom === undefined || doc.changesFrom > since.sentAt) return undefined;
  if ((changes['*'] ?? Number.NEGATIVE_INFINITY) >= since.sentAt) return undefined;
  return Object.entries(changes).flatMap(([name, t]) => (name !== '*' && t >= since.sentAt ? [name] : []));
}

/**
 * `RelayRepository.inventorySince` on a store's reads: `doc` as read, then the whole inventory
 * (`all`) or the items `changedAfter` names (`some`, asked only for a name or more; undefined for
 * an item absent or unreadable).
 */
export async function readInventorySince(
  doc: RelayDoc | undefined,
  since: InventoryMark | undefined,
  all: () => Promise<InventoryItem[]>,
  some: (names: string[]) => Promise<(InventoryItem | undefined)[]>,
): Promise<InventoryRead | undefined> {
  if (!doc) return undefined;
  const mark = { bootId: doc.bootId, sentAt: doc.sentAt };
  const names = changedAfter(doc, since);
  if (names === undefined) return { relay: doc, full: true, items: await all(), removed: [], mark };
  const read = names.length > 0 ? await some(names) : [];
  const items = read.filter((item) => item !== undefined);
  const removed = names.filter((_, i) => read[i] === undefined);
  return { relay: doc, full: false, items, removed, mark };
}

/** Fields that change with every probe; they alone do not justify a write. */
function significant(item: InventoryItem): string {
  const { health, ...rest } = item;
  return canonicalJson({
    ...rest,
    health: health ? { ok: health.ok, failures: health.consecutiveFailures, egressIp: health.egressIp } : null,
  });
}

/** What a report says about the inventory, as `diffInventory` compares it (probe timing aside). */
export function inventoryDigest(report: RelayReport): string {
  const items = report.instances.map(significant).sort();
  const unlisted = report.providers.flatMap((p) => (p.ok ? [] : [p.name])).sort();
  return createHash('sha256').update(JSON.stringify({ items, unlisted })).digest('hex');
}

/** The newest probe in a report (0 when none). */
function latestProbe(report: RelayReport): number {
  return Math.max(0, ...report.instances.map((i) => (i.health ? Date.parse(i.health.lastProbeAt) : 0)));
}

/** Reports are ordered by (bootId, seq); across boots by `startedAt`. */
export function isStale(prev: RelayDoc | undefined, report: RelayReport): boolean {
  if (prev === undefined) return false;
  return prev.bootId === report.bootId ? report.seq <= prev.seq : report.startedAt < prev.startedAt;
}

/**
 * Whether the stored inventory must be read: not when the report has the stored `inventoryDigest`
 * and none of its probes is due (`probeDueAt`), so it changes nothing but the heartbeat.
 */
export function mayChangeInventory(prev: RelayDoc | undefined, report: RelayReport): boolean {
  const due = prev?.probeDueAt;
  return !(prev?.inventoryDigest === inventoryDigest(report) && due !== undefined && latestProbe(report) < due);
}

/** The inventory writes of an accepted report, and what they change. */
export interface InventoryDiff {
  puts: InventoryItem[];
  /** Names of the instances to remove. */
  deletes: string[];
  /** Proxies whose instances changed (worth a check). */
  changedProxies: Set<string>;
  /** Instances changed or removed (the recent-changes record). */
  changedInstances: Set<string>;
  /** When the stored inventory's first probe heartbeat falls due (undefined: not diffed). */
  probeDueAt: number | undefined;
}

/** No inventory writes: the stored inventory stands, due when it was. */
export function noDiff(prev: RelayDoc | undefined): InventoryDiff {
  const none = { puts: [], deletes: [], changedProxies: new Set<string>(), changedInstances: new Set<string>() };
  return { ...none, probeDueAt: prev?.probeDueAt };
}

/** When each item last changed by the record (`*` included): its probes up to then prove nothing. */
function changeTimes(prev: RelayDoc | undefined): (instance: string) => number {
  const changes = parseChanges(prev?.changes) ?? {};
  const any = changes['*'] ?? Number.NEGATIVE_INFINITY;
  return (instance) => Math.max(changes[instance] ?? Number.NEGATIVE_INFINITY, any);
}

const probedAt = (item: InventoryItem | undefined) =>
  item?.health ? Date.parse(item.health.lastProbeAt) : Number.NEGATIVE_INFINITY;

/**
 * Diffs a report against the stored inventory: only what changed, what disappeared, and healthy
 * items whose probe heartbeat is due. When one is due, those half-way there are rewritten with it,
 * so the inventory's heartbeats fall due together rather than one report after another. An item
 * whose stored probe is not newer than its last change (`prev.changes`; the change a report
 * records is stamped with its `sentAt`, after the probe it carries) is rewritten once with the
 * first probe after the change: a check can then rely on the item again (`storedObservation`)
 * instead of reading it on every sweep until the heartbeat.
 */
export function diffInventory(
  stored: InventoryItem[],
  report: RelayReport,
  heartbeatMs: number,
  prevDoc?: RelayDoc,
): InventoryDiff {
  const left = new Map(stored.map((i) => [i.name, i]));
  const changedAt = changeTimes(prevDoc);
  const diff = noDiff(undefined);
  let probeDueAt = Number.MAX_SAFE_INTEGER;
  const probeAge = (item: InventoryItem) => {
    const prev = left.get(item.name);
    return item.health && prev?.health ? probedAt(item) - probedAt(prev) : 0;
  };
  const anyDue = report.instances.some((item) => probeAge(item) >= heartbeatMs);
  for (const item of report.instances) {
    const prev = left.get(item.name);
    const moved = !prev || significant(prev) !== significant(item);
    const change = moved ? report.sentAt : changedAt(item.name);
    const anchor = !moved && probedAt(prev) <= change && probedAt(item) > change;
    const probeDue = item.health && (!prev?.health || anchor || (anyDue && probeAge(item) >= heartbeatMs / 2));
    left.delete(item.name);
    const kept = moved || probeDue ? item : prev;
    if (kept?.health) {
      probeDueAt = Math.min(probeDueAt, probedAt(kept) + heartbeatMs);
      // Not newer than its change: due again with the first probe after it.
      if (probedAt(kept) <= change) probeDueAt = Math.min(probeDueAt, change + 1);
    }
    if (!moved && !probeDue) continue;
    diff.puts.push(item);
    if (!moved) continue;
    diff.changedProxies.add(item.proxy);
    diff.changedInstances.add(item.name);
  }
  // A provider whose listing failed sent no instances: its absence proves nothing.
  const unlisted = new Set(report.providers.filter((p) => !p.ok).map((p) => p.name));
  for (const gone of left.values()) {
    if (unlisted.has(gone.provider)) continue;
    diff.deletes.push(gone.name);
    diff.changedProxies.add(gone.proxy);
    diff.changedInstances.add(gone.name);
  }
  return { ...diff, probeDueAt };
}

/** Whether a command result completes the stored command (only the very command it names, once). */
export function completes(cmd: CommandDoc | undefined, result: CommandResult): cmd is CommandDoc {
  return cmd !== undefined && cmd.commandId === result.commandId && !cmd.done;
}

/**
 * The relay document an accepted report stores. Its `inventoryDigest` and `probeDueAt` are kept
 * only when one batch holds all `writes` (so they always describe what is stored); the changes are
 * recorded in the same write, before the items are (a check reading them meanwhile reads again).
 *
 * @param writes - every write of the report, this one included
 */
export function relayRecord(
  prev: RelayDoc | undefined,
  report: RelayReport,
  now: number,
  diff: InventoryDiff,
  writes: number,
  heartbeatMs: number,
): RelayDoc {
  const { bootId, seq, sentAt, startedAt, providers } = report;
  const changes = recordChanges(prev?.changes, diff.changedInstances, report.sentAt, heartbeatMs);
  const from = changesFrom(prev, report, heartbeatMs);
  const doc: RelayDoc = { bootId, seq, sentAt, startedAt, heartbeatAt: now, providers, changes, changesFrom: from };
  if (writes > BATCH_SIZE || diff.probeDueAt === undefined) return doc;
  return { ...doc, inventoryDigest: inventoryDigest(report), probeDueAt: diff.probeDueAt };
}
