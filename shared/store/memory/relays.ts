/**
 * The relays' state in memory: the rules of relay-rules.ts (the same functions the Firestore
 * repository calls). A report's heartbeat commits only if the relay document was not written since
 * it was read (the Firestore one's precondition); its writes commit together (Firestore's may take
 * several batches, which only ever makes the stored inventory digest absent).
 */
import { RetryableError } from '../../errors.js';
import type { InventoryItem, RelayReport } from '../../wire/protocol.js';
import type { Clock, InstanceAndCommand, InventoryRead, RelayRepository, RelayReportOutcome } from '../ports.js';
import { commandDocSchema, relayDocSchema, type CommandDoc, type InventoryMark, type RelayDoc } from '../records.js';
import {
  completes,
  diffInventory,
  isStale,
  mayChangeInventory,
  noDiff,
  readInventorySince,
  relayRecord,
} from '../relay-rules.js';
import { roundTrip } from './optimistic.js';
import { MemoryState, type Row } from './state.js';

interface RelayRows {
  doc?: Row<RelayDoc>;
  instances: Map<string, InventoryItem>;
  commands: Map<string, CommandDoc>;
}

const REPORT_ATTEMPTS = 10;

/**
 * Round trips of one report's read-to-commit pause: one to three, from a fixed-seed sequence.
 * Concurrent reports then finish in varying order, as over a network; with equal pauses they would
 * run in lockstep, the oldest winning every race, which no database does.
 */
function latencies(): () => number {
  let seed = 12345;
  return () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return 1 + (seed % 3);
  };
}

export class MemoryRelayRepository implements RelayRepository {
  private readonly relays = new Map<string, RelayRows>();
  private readonly latency = latencies();

  constructor(
    clock: Clock,
    /** A healthy instance's probe data is rewritten at most this often. */
    private readonly heartbeatMs = 300_000,
    private readonly state = new MemoryState(clock),
  ) {}

  private rows(relay: string): RelayRows {
    let rows = this.relays.get(relay);
    if (!rows) this.relays.set(relay, (rows = { instances: new Map(), commands: new Map() }));
    return rows;
  }

  relay(relay: string): Promise<RelayDoc | undefined> {
    const parsed = relayDocSchema.safeParse(structuredClone(this.relays.get(relay)?.doc?.doc));
    return Promise.resolve(parsed.success ? parsed.data : undefined);
  }

  instance(relay: string, name: string): Promise<InventoryItem | undefined> {
    return Promise.resolve(structuredClone(this.relays.get(relay)?.instances.get(name)));
  }

  instances(relay: string): Promise<InventoryItem[]> {
    return Promise.resolve(structuredClone([...(this.relays.get(relay)?.instances.values() ?? [])]));
  }

  async inventorySince(relay: string, since: InventoryMark | undefined): Promise<InventoryRead | undefined> {
    return readInventorySince(
      await this.relay(relay),
      since,
      () => this.instances(relay),
      (names) => Promise.all(names.map((name) => this.instance(relay, name))),
    );
  }

  command(relay: string, name: string): Promise<CommandDoc | undefined> {
    const parsed = commandDocSchema.safeParse(structuredClone(this.relays.get(relay)?.commands.get(name)));
    return Promise.resolve(parsed.success ? parsed.data : undefined);
  }

  /** Both rows in one synchronous step: nothing can land between them. */
  async instanceAndCommand(relay: string, name: string): Promise<InstanceAndCommand> {
    const [item, command] = [this.instance(relay, name), this.command(relay, name)];
    return { item: await item, command: await command };
  }

  recordCommand(relay: string, name: string, command: Omit<CommandDoc, 'done' | 'error' | 'sentAt'>): Promise<void> {
    this.rows(relay).commands.set(name, { ...structuredClone(command), done: false, error: null });
    return Promise.resolve();
  }

  markSent(relay: string, name: string, commandId: string, at: number): Promise<void> {
    const commands = this.rows(relay).commands;
    const cmd = commands.get(name);
    if (cmd?.commandId === commandId) commands.set(name, { ...cmd, sentAt: at });
    return Promise.resolve();
  }

  async applyReport(report: RelayReport, now: number): Promise<RelayReportOutcome> {
    const rows = this.rows(report.relay);
    for (let attempt = 0; attempt < REPORT_ATTEMPTS; attempt++) {
      const read = rows.doc;
      const prev = read && (await this.relay(report.relay));
      const stale = isStale(prev, report);
      const diff =
        !stale && mayChangeInventory(prev, report)
          ? diffInventory(await this.instances(report.relay), report, this.heartbeatMs, prev)
          : noDiff(prev);
      // Results are applied even from a stale report (they complete only the command they name).
      const completed = report.results.flatMap((result) => {
        const cmd = rows.commands.get(result.name);
        return completes(cmd, result) ? [{ cmd, result }] : [];
      });
      for (let trips = this.latency(); trips > 0; trips--) await roundTrip();
      // Another report stored the relay document since it was read: look again.
      if (!stale && rows.doc !== read) continue;
      if (!stale) {
        const count = 1 + diff.puts.length + diff.deletes.length + completed.length;
        rows.doc = this.state.row(relayRecord(prev, report, now, diff, count, this.heartbeatMs));
      }
      for (const item of diff.puts) rows.instances.set(item.name, structuredClone(item));
      for (const name of diff.deletes) rows.instances.delete(name);
      const changed = new Set(diff.changedProxies);
      for (const { cmd, result } of completed) {
        // As Firestore's field update: on the command stored now.
        const current = rows.commands.get(result.name);
        if (current) rows.commands.set(result.name, { ...current, done: true, error: result.error ?? null });
        changed.add(cmd.proxy);
      }
      return { stale, changedProxies: [...changed] };
    }
    throw new RetryableError(`too much contention storing relay ${report.relay}'s report`);
  }
}
