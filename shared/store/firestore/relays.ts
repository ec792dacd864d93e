/** The relays' state on Firestore: the rules in relay-rules.ts, written in preconditioned batches. */
import {
  FieldValue,
  type DocumentReference,
  type DocumentSnapshot,
  type Firestore,
  type WriteBatch,
} from '@google-cloud/firestore';
import { RetryableError } from '../../errors.js';
import type { Logger } from '../../logger.js';
import { inventoryItemSchema, type CommandResult, type InventoryItem, type RelayReport } from '../../wire/protocol.js';
import { COLLECTIONS } from './client.js';
import { grpcCode, GRPC_CODES } from '../grpc-codes.js';
import type { InstanceAndCommand, InventoryRead, RelayRepository, RelayReportOutcome } from '../ports.js';
import { commandDocSchema, relayDocSchema, type CommandDoc, type InventoryMark, type RelayDoc } from '../records.js';
import {
  BATCH_SIZE,
  readInventorySince,
  completes,
  diffInventory,
  isStale,
  mayChangeInventory,
  noDiff,
  relayRecord,
} from '../relay-rules.js';
import { runTransaction } from './transaction.js';

function parseCommand(snap: DocumentSnapshot): CommandDoc | undefined {
  if (!snap.exists) return undefined;
  const parsed = commandDocSchema.safeParse(snap.data());
  return parsed.success ? parsed.data : undefined;
}

export class FirestoreRelayRepository implements RelayRepository {
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

  /** Both documents at one read time (one batch get): two reads could straddle a report. */
  async instanceAndCommand(relay: string, name: string): Promise<InstanceAndCommand> {
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

  /** The changed items in one batch get (one read each, found or not). */
  async inventorySince(relay: string, since: InventoryMark | undefined): Promise<InventoryRead | undefined> {
    const instances = this.relayRef(relay).collection('instances');
    return readInventorySince(
      await this.relay(relay),
      since,
      () => this.instances(relay),
      async (names) => {
        const snaps = await this.db.getAll(...names.map((name) => instances.doc(name)));
        return snaps.map((snap) => this.parseInstance(relay, snap.id, snap));
      },
    );
  }

  async command(relay: string, name: string): Promise<CommandDoc | undefined> {
    return parseCommand(await this.relayRef(relay).collection('commands').doc(name).get());
  }

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

  async markSent(relay: string, name: string, commandId: string, at: number): Promise<void> {
    const ref = this.relayRef(relay).collection('commands').doc(name);
    await runTransaction(this.db, this.logger, { kind: 'command-sent' }, async (tx) => {
      const snap = await tx.get(ref);
      if (snap.get('commandId') === commandId) tx.update(ref, { sentAt: at });
    });
  }

  /**
   * Applies a relay report (relay-rules.ts). A report only ever writes under its own
   * `relays/{report.relay}`. The heartbeat write is preconditioned on the relay document not having
   * moved since it was read, and commits in the same batch as the inventory diff: a report
   * processed concurrently makes this batch fail and be redone, so an older report can never
   * overwrite (or delete) what a newer one wrote. No transaction: reports arrive together and a
   * transaction's lock on this one document serialised them into lock timeouts.
   */
  async applyReport(report: RelayReport, now: number): Promise<RelayReportOutcome> {
    for (let attempt = 0; attempt < 10; attempt++) {
      const writes = await this.reportWrites(report, now);
      try {
        for (let i = 0; i < writes.batches.length; i += BATCH_SIZE) {
          const batch = this.db.batch();
          for (const write of writes.batches.slice(i, i + BATCH_SIZE)) write(batch);
          await batch.commit();
        }
        return writes.outcome;
      } catch (err) {
        const code = grpcCode(err);
        // Another report got there first (a precondition failed, or a create found the document): look again.
        if (code !== GRPC_CODES.FAILED_PRECONDITION && code !== GRPC_CODES.ALREADY_EXISTS) throw err;
      }
    }
    throw new RetryableError(`too much contention storing relay ${report.relay}'s report`);
  }

  /** Reads what a report is applied to and returns its writes, heartbeat first. */
  private async reportWrites(
    report: RelayReport,
    now: number,
  ): Promise<{ batches: ((batch: WriteBatch) => void)[]; outcome: RelayReportOutcome }> {
    const ref = this.relayRef(report.relay);
    const snap = await ref.get();
    const parsed = relayDocSchema.safeParse(snap.data());
    const prev = parsed.success ? parsed.data : undefined;
    const stale = isStale(prev, report);
    // Results are applied even from a stale report: they only ever complete the very command
    // they name, and a result lost with a dropped report would leave its command pending forever.
    // Read beside the inventory: neither read depends on the other (one round trip, not two).
    const [inventory, completed] = await Promise.all([
      !stale && mayChangeInventory(prev, report) ? this.instances(report.relay) : undefined,
      this.completedCommands(ref, report.results),
    ]);
    const diff = inventory ? diffInventory(inventory, report, this.heartbeatMs, prev) : noDiff(prev);
    const batches: ((batch: WriteBatch) => void)[] = [];
    if (!stale) {
      const count = 1 + diff.puts.length + diff.deletes.length + completed.length;
      const doc = relayRecord(prev, report, now, diff, count, this.heartbeatMs);
      const cleared = { inventoryDigest: FieldValue.delete(), probeDueAt: FieldValue.delete() };
      batches.push((b) =>
        snap.exists && snap.updateTime
          ? b.update(ref, { ...cleared, ...doc }, { lastUpdateTime: snap.updateTime })
          : b.create(ref, doc),
      );
    }
    const instances = ref.collection('instances');
    for (const item of diff.puts) batches.push((b) => b.set(instances.doc(item.name), item));
    for (const name of diff.deletes) batches.push((b) => b.delete(instances.doc(name)));
    const changed = new Set(diff.changedProxies);
    for (const { cmd, result } of completed) {
      batches.push((b) =>
        b.update(ref.collection('commands').doc(result.name), { done: true, error: result.error ?? null }),
      );
      changed.add(cmd.proxy);
    }
    return { batches, outcome: { stale, changedProxies: [...changed] } };
  }

  /** The commands the report's results complete (relay-rules.ts#completes). */
  private async completedCommands(
    ref: DocumentReference,
    results: CommandResult[],
  ): Promise<{ cmd: CommandDoc; result: CommandResult }[]> {
    if (results.length === 0) return [];
    // One batch get for all of them (one read each, found or not), not one round trip each.
    const snaps = await this.db.getAll(...results.map((result) => ref.collection('commands').doc(result.name)));
    return results.flatMap((result, i) => {
      const parsed = commandDocSchema.safeParse(snaps[i]?.data());
      const cmd = parsed.success ? parsed.data : undefined;
      return completes(cmd, result) ? [{ cmd, result }] : [];
    });
  }
}
