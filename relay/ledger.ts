/** The relay's command ledger: the last command applied per instance, persisted across restarts. */
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import type { Logger } from '../shared/logger.js';
import { writeFileAtomic } from './atomic-file.js';
import { isErrno } from './errno.js';

/** The last command applied to one instance. */
export interface LedgerEntry {
  commandId: string;
  /** The command's `issuedAt` (epoch ms): anything issued earlier for this instance is stale. */
  issuedAt: number;
  /** The backend failed it (absent in ledgers written before this was recorded: treated as applied). */
  failed?: boolean;
}

/** A ledger entry as stored: when this relay applied it decides when it is forgotten. */
interface StoredEntry extends LedgerEntry {
  appliedAt: number;
}

const ledgerFileSchema = z.object({
  version: z.literal(1),
  commands: z.record(
    z.string(),
    z.object({ commandId: z.string(), issuedAt: z.number(), appliedAt: z.number(), failed: z.boolean().optional() }),
  ),
});

/**
 * Entries applied longer ago than this are forgotten. It exceeds Pub/Sub's default 7-day
 * retention, so a command can no longer be redelivered once its instance's entry is dropped.
 */
export const LEDGER_RETENTION_MS = 14 * 24 * 3600 * 1000;

/** The key of one instance in the ledger (names are unique per provider). */
export function ledgerKey(provider: string, name: string): string {
  return `${provider}/${name}`;
}

/**
 * In memory, written through to a JSON file (atomically) on every change. A missing file is an
 * empty ledger; an unreadable one is logged and replaced.
 */
export class CommandLedger {
  private writing: Promise<void> = Promise.resolve();

  private constructor(
    private readonly file: string | undefined,
    private readonly entries: Map<string, StoredEntry>,
    private readonly now: () => number,
  ) {}

  /**
   * @param file - where the ledger lives; `undefined` keeps it in memory only (tests)
   */
  static async load(file: string | undefined, logger: Logger, now: () => number = Date.now): Promise<CommandLedger> {
    const entries = new Map<string, StoredEntry>();
    if (file) {
      let text: string | undefined;
      try {
        text = await readFile(file, 'utf8');
      } catch (err) {
        if (!isErrno(err, 'ENOENT')) throw err;
      }
      if (text !== undefined) {
        const parsed = ledgerFileSchema.safeParse(safeJson(text));
        if (parsed.success) for (const [k, v] of Object.entries(parsed.data.commands)) entries.set(k, v);
        else
          logger.warn('command ledger is unreadable; starting empty', { file, error: parsed.error.issues[0]?.message });
      }
    }
    return new CommandLedger(file, entries, now);
  }

  /** The last command applied to `key`, if any. */
  get(key: string): LedgerEntry | undefined {
    const entry = this.entries.get(key);
    return entry && { commandId: entry.commandId, issuedAt: entry.issuedAt, ...(entry.failed && { failed: true }) };
  }

  /** Records a command as applied and persists the ledger before resolving. */
  async record(key: string, entry: LedgerEntry): Promise<void> {
    const previous = this.entries.get(key);
    if (previous && previous.issuedAt > entry.issuedAt) return;
    this.entries.set(key, {
      commandId: entry.commandId,
      issuedAt: entry.issuedAt,
      appliedAt: this.now(),
      ...(entry.failed && { failed: true }),
    });
    await this.persist();
  }

  private persist(): Promise<void> {
    const file = this.file;
    if (!file) return Promise.resolve();
    // Writes go one after another, each with the whole current map, so the last one wins.
    const next = this.writing.then(async () => {
      const horizon = this.now() - LEDGER_RETENTION_MS;
      for (const [k, v] of this.entries) if (v.appliedAt < horizon) this.entries.delete(k);
      await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
      await writeFileAtomic(file, `${JSON.stringify({ version: 1, commands: Object.fromEntries(this.entries) })}\n`);
    });
    this.writing = next.catch(() => undefined);
    return next;
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
