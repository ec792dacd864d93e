/**
 * The check batch: what the proxies of one check message share, read once per batch — each
 * provider's health and each report-fed provider's recent changes. The caller (`runCheck`) makes one
 * per message and passes it to every `reconcileProxy` of that message.
 */
import { currentHealth } from '../health.js';
import type { Provider, ProviderHealth } from '../providers/contract.js';
import type { ReconcileDeps } from './context.js';

/** Whether an instance changed since a time (`Provider.changes`). */
export type Changed = (instance: string, sinceMs: number) => boolean;

export interface CheckBatch {
  /** Per provider: its health verdict. */
  readonly health: Map<string, Promise<ProviderHealth | undefined>>;
  /** Per report-fed provider: its recent changes (undefined when they could not be read). */
  readonly changes: Map<string, Promise<Changed | undefined>>;
}

/** @param health - verdicts already read (a sweep page passes its own on to the next page) */
export function newCheckBatch(health: Record<string, ProviderHealth> = {}): CheckBatch {
  const known = Object.entries(health).map(([name, h]) => [name, Promise.resolve(h)] as const);
  return { health: new Map(known), changes: new Map() };
}

/** The verdicts this batch has read so far (those that could be read). */
export async function knownHealth(batch: CheckBatch): Promise<Record<string, ProviderHealth>> {
  const out: Record<string, ProviderHealth> = {};
  for (const [name, pending] of batch.health) {
    const health = await pending.catch(() => undefined);
    if (health) out[name] = { ok: health.ok, message: health.message.slice(0, 500), latencyMs: health.latencyMs };
  }
  return out;
}

/** The provider's health, asked once per batch. */
export function providerHealth(
  batch: CheckBatch,
  deps: Pick<ReconcileDeps, 'config' | 'providerStatus' | 'now'>,
  provider: Provider,
): Promise<ProviderHealth | undefined> {
  let cached = batch.health.get(provider.name);
  if (!cached) {
    cached = currentHealth(provider, {
      providerStatus: deps.providerStatus,
      intervalMs: deps.config.healthIntervalSeconds * 1000,
      now: (deps.now ?? Date.now)(),
    });
    batch.health.set(provider.name, cached);
  }
  return cached;
}

/** The provider's recent changes, read once per batch. */
export function recentChanges(batch: CheckBatch, provider: Provider): Promise<Changed | undefined> {
  let changes = batch.changes.get(provider.name);
  if (!changes) {
    // A failed read only means the inventory is read proxy by proxy, as without the shortcut.
    changes = provider.changes ? provider.changes().catch(() => undefined) : Promise.resolve(undefined);
    batch.changes.set(provider.name, changes);
  }
  return changes;
}
