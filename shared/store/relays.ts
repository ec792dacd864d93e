/** The relays' state: `relays/{id}` heartbeat, `instances/{name}` inventory, `commands/{name}` issued commands. */
import { createHash } from 'node:crypto';
import {
  FieldValue,
  type DocumentReference,
  type DocumentSnapshot,
  type Firestore,
  type WriteBatch,
} from '@google-cloud/firestore';
import { RetryableError } from '../errors.js';
import { z } from 'zod';
import { canonicalJson } from '../domain/spec-hash.js';
import type { Logger } from '../logger.js';
import { inventoryItemSchema, type InventoryItem, type RelayReport } from '../relay/protocol.js';
import { COLLECTIONS } from './firestore.js';
import { grpcCode, GRPC_CODES } from './grpc-codes.js';

export const relayDocSchema = z.object({
  bootId: z.string(),
  seq: z.number(),
  sentAt: z.number(),
  startedAt: z.number(),
  /** When the last report was stored (the heartbeat). */
  heartbeatAt: z.number(),
  providers: z.array(z.object({ name: z.string(), type: z.string(), ok: z.boolean(), message: z.string() })),
  /** `inventoryDigest` of the report whose inventory is stored; absent when its writes took several batches. */
  inventoryDigest: z.string().optional(),
  /** When the stored inventory's first probe heartbeat falls due (epoch ms). */
  probeDueAt: z.number().optional(),
  /** JSON `{instance: sentAt}` of the items changed or removed recently (`*`: any item); see `changedSince`. */
  changes: z.string().optional(),
});
export type RelayDoc = z.infer<typeof relayDocSchema>;

const changesSchema = z.record(z.string(), z.number());
/** Changes are kept a heartbeat and this long (relay clocks may drift from the functions'). */
const CHANGES_SLACK_MS = 300_000;
/** More recent changes than this are recorded as one: every item changed (`*`). */
const MAX_CHANGES = 2000;

function parseChanges(json: string | undefined): Record<string, number> | undefined {
  if (json === undefined) return undefined;
  try {
    const parsed = changesSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The recent changes after a report sent at `at` changed (or removed) `changed`: older entries
 * are dropped a heartbeat (and some slack) later. Without a record of earlier changes (a first
 * report, or one stored before changes were recorded), every item counts as changed now.
 */
function recordChanges(previous: string | undefined, changed: Set<string>, at: number, heartbeatMs: number): string {
  const known = parseChanges(previous) ?? { '*': at };
  const kept: Record<string, number> = {};
  for (const [name, t] of Object.entries(known)) if (t >= at - heartbeatMs - CHANGES_SLACK_MS) kept[name] = t;
  for (const name of changed) kept[name] = at;
  return JSON.stringify(Object.keys(kept).length > MAX_CHANGES ? { '*': at } : kept);
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

/** Firestore writes of one batch at most. */
const BATCH_SIZE = 400;

/** The last command issued for an instance, and whether the relay has applied it. */
export const commandDocSchema = z.object({
  commandId: z.string(),
  kind: z.enum(['create', 'delete']),
  issuedAt: z.number(),
  provider: z.string(),
  proxy: z.string(),
  specHash: z.string(),
  done: z.boolean(),
  error: inventoryItemSchema.shape.error.nullable(),
  /**
   * When the command was last published (epoch ms). Absent: recorded but its publish never
   * completed (the sender died or the publish failed), so it must be sent again.
   */
  sentAt: z.number().optional(),
});
export type CommandDoc = z.infer<typeof commandDocSchema>;

function parseCommand(snap: DocumentSnapshot): CommandDoc | undefined {
  if (!snap.exists) return undefined;
  const parsed = commandDocSchema.safeParse(snap.data());
  return parsed.success ? parsed.data : undefined;
}

/** What applying a report changed: the proxies whose instances changed (worth a check). */
export interface ReportOutcome {
  stale: boolean;
  changedProxies: string[];
}

/** Fields that change with every probe; they alone do not justify a write. */
function significant(item: InventoryItem): string {
  const { health, ...rest } = item;
  return canonicalJson({
    ...rest,
    health: health ? { ok: health.ok, failures: health.consecutiveFailures, egressIp: health.egressIp } : null,
  });
}

export class RelayStore {
  constructor(
    private readonly db: Firestore,
    private readonly logger: Logger,
    /** A healthy instance's probe data is rewritten at most this often. */
    private readonly heartbeatMs = 300_000,
  ) {}

  private relayRef(relay: string) {
    return this.db.collection(COLLECTIONS.relays).doc(relay);
  }

  async relay(relay: string): Promise<RelayDoc | undefined> {
    const snap = await this.relayRef(relay).get();
    if (!snap.exists) return undefined;
    const parsed = relayDocSchema.safeParse(snap.data());
    return parsed.success ? parsed.data : undefined;
  }

  async instance(relay: string, name: string): Promise<InventoryItem | undefined> {
    return this.parseInstance(relay, name, await this.relayRef(relay).collection('instances').doc(name).get());
  }

  private parseInstance(relay: string, name: string, snap: DocumentSnapshot): InventoryItem | undefined {
    if (!snap.exists) return undefined;
    const parsed = inventoryItemSchema.safeParse(snap.data());
    if (!parsed.success) this.logger.warn('corrupt inventory document ignored', { relay, instance: name });
    return parsed.success ? parsed.data : undefined;
  }

  /**
   * An instance's inventory item and its last command, read at one read time (one batch get). Two
   * separate reads can straddle a report: the item read before the report stored it, the command
   * after the report marked its create done — a running instance that looks gone (NotFound).
   */
  async instanceAndCommand(
    relay: string,
    name: string,
  ): Promise<{ item: InventoryItem | undefined; command: CommandDoc | undefined }> {
    const ref = this.relayRef(relay);
    const [item, command] = await this.db.getAll(
      ref.collection('instances').doc(name),
      ref.collection('commands').doc(name),
    );
    if (!item || !command)
      throw new Error(`getAll of relays/${relay} instance and command ${name} returned too few documents`);
    return { item: this.parseInstance(relay, name, item), command: parseCommand(command) };
  }

  async instances(relay: string): Promise<InventoryItem[]> {
    const snap = await this.relayRef(relay).collection('instances').get();
    return snap.docs.flatMap((d) => {
      const parsed = inventoryItemSchema.safeParse(d.data());
      return parsed.success ? [parsed.data] : [];
    });
  }

  async command(relay: string, name: string): Promise<CommandDoc | undefined> {
    return parseCommand(await this.relayRef(relay).collection('commands').doc(name).get());
  }

  /**
   * Records a command about to be published (before the publish, so a report cannot race it); it
   * counts as unsent until {@link markSent}.
   */
  async recordCommand(
    relay: string,
    name: string,
    command: Omit<CommandDoc, 'done' | 'error' | 'sentAt'>,
  ): Promise<void> {
    await this.relayRef(relay)
      .collection('commands')
      .doc(name)
      .set({ ...command, done: false, error: null });
  }

  /** Notes that command `commandId` was published at `at`; a newer command recorded since is left alone. */
  async markSent(relay: string, name: string, commandId: string, at: number): Promise<void> {
    const ref = this.relayRef(relay).collection('commands').doc(name);
    await this.db.runTransaction(async (tx) => {
      const snap = await tx.get(ref);
      if (snap.get('commandId') === commandId) tx.update(ref, { sentAt: at });
    });
  }

  /**
   * Applies a relay report: heartbeat, inventory (writing only what changed), command results.
   * Reports are ordered by (bootId, seq); an older or duplicated one is ignored. A report only
   * ever writes under its own `relays/{report.relay}`.
   *
   * The stored inventory is read only when the report may change it: a report with the same
   * `inventoryDigest` as the one stored, none of whose probes is due (`probeDueAt`), changes nothing
   * but the heartbeat. The digest is stored in the same batch as the inventory writes, and only when
   * one batch holds them all, so it always describes what is stored.
   */
  async applyReport(report: RelayReport, now: number): Promise<ReportOutcome> {
    const ref = this.relayRef(report.relay);
    const doc: RelayDoc = {
      bootId: report.bootId,
      seq: report.seq,
      sentAt: report.sentAt,
      startedAt: report.startedAt,
      heartbeatAt: now,
      providers: report.providers,
    };
    for (let attempt = 0; attempt < 10; attempt++) {
      const snap = await ref.get();
      const parsed = relayDocSchema.safeParse(snap.data());
      const prev = parsed.success ? parsed.data : undefined;
      const stale =
        prev !== undefined &&
        (prev.bootId === report.bootId ? report.seq <= prev.seq : report.startedAt < prev.startedAt);
      const changed = new Set<string>();
      const changedInstances = new Set<string>();
      const writes: ((batch: WriteBatch) => void)[] = [];
      const digest = inventoryDigest(report);
      let probeDueAt = prev?.probeDueAt;
      if (!stale) {
        // The heartbeat write is preconditioned on the relay document not having moved since it was
        // read, and it commits in the same batch as the inventory diff: a report processed
        // concurrently makes this batch fail and be redone, so an older report can never
        // overwrite (or delete) what a newer one wrote. No transaction: reports arrive together
        // and a transaction's lock on this one document serialised them into lock timeouts.
        writes.push((b) => {
          const whole = writes.length <= BATCH_SIZE && probeDueAt !== undefined;
          const inventory = whole ? { inventoryDigest: digest, probeDueAt } : undefined;
          // Recorded before the items are written: a check that reads them meanwhile reads again.
          const changes = recordChanges(prev?.changes, changedInstances, report.sentAt, this.heartbeatMs);
          if (snap.exists && snap.updateTime) {
            const cleared = { inventoryDigest: FieldValue.delete(), probeDueAt: FieldValue.delete() };
            b.update(ref, { ...doc, ...(inventory ?? cleared), changes }, { lastUpdateTime: snap.updateTime });
          } else b.create(ref, { ...doc, ...inventory, changes });
        });
        const unchanged =
          prev?.inventoryDigest === digest && probeDueAt !== undefined && latestProbe(report) < probeDueAt;
        if (!unchanged) probeDueAt = await this.diffInventory(ref, report, writes, changed, changedInstances);
      }
      // Results are applied even from a stale report: they only ever complete the very command
      // they name, and a result lost with a dropped report would leave its command pending forever.
      for (const result of report.results) {
        const cmdRef = ref.collection('commands').doc(result.name);
        const cmd = commandDocSchema.safeParse((await cmdRef.get()).data());
        if (cmd.success && cmd.data.commandId === result.commandId && !cmd.data.done) {
          writes.push((b) => b.update(cmdRef, { done: true, error: result.error ?? null }));
          changed.add(cmd.data.proxy);
        }
      }
      try {
        for (let i = 0; i < writes.length; i += BATCH_SIZE) {
          const batch = this.db.batch();
          for (const write of writes.slice(i, i + BATCH_SIZE)) write(batch);
          await batch.commit();
        }
        return { stale, changedProxies: [...changed] };
      } catch (err) {
        const code = grpcCode(err);
        // Another report got there first (a precondition failed, or a create found the document): look again.
        if (code !== GRPC_CODES.FAILED_PRECONDITION && code !== GRPC_CODES.ALREADY_EXISTS) throw err;
      }
    }
    throw new RetryableError(`too much contention storing relay ${report.relay}'s report`);
  }

  /**
   * Queues the inventory writes of an accepted report: only what changed, what disappeared, and
   * healthy items whose probe heartbeat is due. When one is due, those half-way there are rewritten
   * with it, so the inventory's heartbeats fall due together rather than one report after another.
   *
   * @returns when the stored inventory's first probe heartbeat falls due
   */
  private async diffInventory(
    ref: DocumentReference,
    report: RelayReport,
    writes: ((batch: WriteBatch) => void)[],
    changed: Set<string>,
    changedInstances: Set<string>,
  ): Promise<number> {
    const instancesRef = ref.collection('instances');
    const stored = new Map((await this.instances(report.relay)).map((i) => [i.name, i]));
    const probeAge = (item: InventoryItem) => {
      const prev = stored.get(item.name)?.health;
      return item.health && prev ? Date.parse(item.health.lastProbeAt) - Date.parse(prev.lastProbeAt) : 0;
    };
    const anyDue = report.instances.some((item) => probeAge(item) >= this.heartbeatMs);
    let probeDueAt = Number.MAX_SAFE_INTEGER;
    for (const item of report.instances) {
      const prev = stored.get(item.name);
      const moved = !prev || significant(prev) !== significant(item);
      const probeDue = item.health && (!prev?.health || (anyDue && probeAge(item) >= this.heartbeatMs / 2));
      stored.delete(item.name);
      const kept = moved || probeDue ? item : prev;
      if (kept?.health) probeDueAt = Math.min(probeDueAt, Date.parse(kept.health.lastProbeAt) + this.heartbeatMs);
      if (!moved && !probeDue) continue;
      writes.push((b) => b.set(instancesRef.doc(item.name), item));
      if (!moved) continue;
      changed.add(item.proxy);
      changedInstances.add(item.name);
    }
    // A provider whose listing failed sent no instances: its absence proves nothing.
    const unlisted = new Set(report.providers.filter((p) => !p.ok).map((p) => p.name));
    for (const gone of stored.values()) {
      if (unlisted.has(gone.provider)) continue;
      writes.push((b) => b.delete(instancesRef.doc(gone.name)));
      changed.add(gone.proxy);
      changedInstances.add(gone.name);
    }
    return probeDueAt;
  }
}
