/** Building a relay report: backend health, the full inventory with probe health, pending results. */
import { toValidationError } from '../shared/domain/proxy.js';
import type { Instance, ProviderHealth } from '../shared/providers/contract.js';
import {
  relayReportSchema,
  type CommandResult,
  type InventoryItem,
  type RelayReport,
} from '../shared/wire/protocol.js';
import type { RelayBackend } from './backends/backend.js';
import { ledgerKey, type CommandLedger } from './ledger.js';
import type { HealthBook } from './probes.js';

/** The most results one report may carry (the protocol's limit). */
export const MAX_RESULTS_PER_REPORT = 1000;

/** Everything one report is built from. */
export interface ReportSources {
  relay: string;
  bootId: string;
  seq: number;
  startedAt: number;
  sentAt: number;
  backends: ReadonlyMap<string, RelayBackend>;
  health: HealthBook;
  ledger: CommandLedger;
  /** Results not yet reported; at most {@link MAX_RESULTS_PER_REPORT} are included. */
  results: readonly CommandResult[];
  /** Trace context of settling instances (`RelayReport.traces`); omitted when empty. */
  traces?: Record<string, string>;
}

/**
 * Builds a report. A backend whose `check` or `list` fails is reported with `ok: false` (and, for
 * a failed listing, no instances): a relay-backed provider must then not read absence as NotFound.
 *
 * @throws Error when the report would not satisfy the protocol schema (a bug, never data)
 */
export async function buildReport(input: ReportSources): Promise<RelayReport> {
  const perBackend = await Promise.all(
    [...input.backends].map(async ([provider, backend]) => {
      const [health, listing] = await Promise.all([
        backend.check().catch((err: unknown): ProviderHealth => ({
          ok: false,
          message: `check failed: ${message(err)}`,
          latencyMs: 0,
        })),
        backend.list().then(
          (instances): Listing => ({ instances, error: undefined }),
          (err: unknown): Listing => ({ instances: [], error: message(err) }),
        ),
      ]);
      const ok = health.ok && listing.error === undefined;
      const text = listing.error === undefined ? health.message : `inventory unavailable: ${listing.error}`;
      return {
        status: { name: provider, type: backend.type.slice(0, 32), ok, message: text.slice(0, 1024) },
        items: listing.instances.map((instance) => inventoryItem(provider, instance, input)),
      };
    }),
  );
  const report: RelayReport = {
    relay: input.relay,
    bootId: input.bootId,
    seq: input.seq,
    sentAt: input.sentAt,
    startedAt: input.startedAt,
    providers: perBackend.map((b) => b.status),
    instances: perBackend.flatMap((b) => b.items),
    results: input.results.slice(0, MAX_RESULTS_PER_REPORT),
  };
  const traces = Object.entries(input.traces ?? {}).slice(0, MAX_RESULTS_PER_REPORT);
  if (traces.length > 0) report.traces = Object.fromEntries(traces);
  const checked = relayReportSchema.safeParse(report);
  if (!checked.success)
    throw new Error(`relay report is invalid: ${toValidationError(checked.error, 'report').message}`);
  return checked.data;
}

type Listing = { instances: Instance[]; error: string | undefined };

/**
 * One inventory entry: every field of the instance but its health, which the relay's own probes
 * give; only defined keys (the report is stored in Firestore as is).
 */
function inventoryItem(provider: string, instance: Instance, input: ReportSources): InventoryItem {
  const { health: _backendHealth, ...fields } = instance;
  const item: InventoryItem = { ...fields, provider };
  const health = input.health.get(provider, instance);
  if (health && instance.state === 'Running') item.health = health;
  const last = input.ledger.get(ledgerKey(provider, instance.name));
  if (last) item.commandId = last.commandId;
  for (const [key, value] of Object.entries(item)) if (value === undefined) Reflect.deleteProperty(item, key);
  return item;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
