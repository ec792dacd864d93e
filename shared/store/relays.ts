/** The relays' state: `relays/{id}` heartbeat, `instances/{name}` inventory, `commands/{name}` issued commands. */
import type { DocumentReference, Firestore, WriteBatch } from '@google-cloud/firestore';
import { RetryableError } from '../errors.js';
import { z } from 'zod';
import { canonicalJson } from '../domain/spec-hash.js';
import type { Logger } from '../logger.js';
import { inventoryItemSchema, type InventoryItem, type RelayReport } from '../relay/protocol.js';
import { COLLECTIONS } from './firestore.js';

export const relayDocSchema = z.object({
  bootId: z.string(),
  seq: z.number(),
  sentAt: z.number(),
  startedAt: z.number(),
  /** When the last report was stored (the heartbeat). */
  heartbeatAt: z.number(),
  providers: z.array(z.object({ name: z.string(), type: z.string(), ok: z.boolean(), message: z.string() })),
});
export type RelayDoc = z.infer<typeof relayDocSchema>;

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
});
export type CommandDoc = z.infer<typeof commandDocSchema>;

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
    const snap = await this.relayRef(relay).collection('instances').doc(name).get();
    if (!snap.exists) return undefined;
    const parsed = inventoryItemSchema.safeParse(snap.data());
    if (!parsed.success) this.logger.warn('corrupt inventory document ignored', { relay, instance: name });
    return parsed.success ? parsed.data : undefined;
  }

  async instances(relay: string): Promise<InventoryItem[]> {
    const snap = await this.relayRef(relay).collection('instances').get();
    return snap.docs.flatMap((d) => {
      const parsed = inventoryItemSchema.safeParse(d.data());
      return parsed.success ? [parsed.data] : [];
    });
  }

  async command(relay: string, name: string): Promise<CommandDoc | undefined> {
    const snap = await this.relayRef(relay).collection('commands').doc(name).get();
    if (!snap.exists) return undefined;
    const parsed = commandDocSchema.safeParse(snap.data());
    return parsed.success ? parsed.data : undefined;
  }

  /** Records a command about to be published (before the publish, so a report cannot race it). */
  async recordCommand(relay: string, name: string, command: Omit<CommandDoc, 'done' | 'error'>): Promise<void> {
    await this.relayRef(relay)
      .collection('commands')
      .doc(name)
      .set({ ...command, done: false, error: null });
  }

  /**
   * Applies a relay report: heartbeat, inventory (writing only what changed), command results.
   * Reports are ordered by (bootId, seq); an older or duplicated one is ignored. A report only
   * ever writes under its own `relays/{report.relay}`.
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
      const writes: ((batch: WriteBatch) => void)[] = [];
      if (!stale) {
        // The heartbeat write is preconditioned on the relay document not having moved since it was
        // read, and it commits in the same batch as the inventory diff: a report processed
        // concurrently makes this batch fail and be redone, so an older report can never
        // overwrite (or delete) what a newer one wrote. No transaction: reports arrive together
        // and a transaction's lock on this one document serialised them into lock timeouts.
        writes.push((b) =>
          snap.exists && snap.updateTime
            ? b.update(ref, { ...doc }, { lastUpdateTime: snap.updateTime })
            : b.create(ref, doc),
        );
        await this.diffInventory(ref, report, writes, changed);
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
        for (let i = 0; i < writes.length; i += 400) {
          const batch = this.db.batch();
          for (const write of writes.slice(i, i + 400)) write(batch);
          await batch.commit();
        }
        return { stale, changedProxies: [...changed] };
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        // FAILED_PRECONDITION (9) or ALREADY_EXISTS (6): another report got there first; look again.
        if (code !== 9 && code !== 6) throw err;
      }
    }
    throw new RetryableError(`too much contention storing relay ${report.relay}'s report`);
  }

  /** Queues the inventory writes of an accepted report: only what changed, and what disappeared. */
  private async diffInventory(
    ref: DocumentReference,
    report: RelayReport,
    writes: ((batch: WriteBatch) => void)[],
    changed: Set<string>,
  ): Promise<void> {
    const instancesRef = ref.collection('instances');
    const stored = new Map((await this.instances(report.relay)).map((i) => [i.name, i]));
    for (const item of report.instances) {
      const prev = stored.get(item.name);
      stored.delete(item.name);
      const moved = !prev || significant(prev) !== significant(item);
      const probeDue =
        item.health &&
        (!prev?.health ||
          Date.parse(item.health.lastProbeAt) - Date.parse(prev.health.lastProbeAt) >= this.heartbeatMs);
      if (!moved && !probeDue) continue;
      writes.push((b) => b.set(instancesRef.doc(item.name), item));
      if (moved) changed.add(item.proxy);
    }
    // A provider whose listing failed sent no instances: its absence proves nothing.
    const unlisted = new Set(report.providers.filter((p) => !p.ok).map((p) => p.name));
    for (const gone of stored.values()) {
      if (unlisted.has(gone.provider)) continue;
      writes.push((b) => b.delete(instancesRef.doc(gone.name)));
      changed.add(gone.proxy);
    }
  }
}
