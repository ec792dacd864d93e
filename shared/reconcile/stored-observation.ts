/**
 * A sweep's shortcut for settled relay-backed proxies: while their instance has not changed since
 * it was last observed, the stored status is that observation, used (instead of reading the relay's
 * inventory) only to confirm that nothing is to be done.
 */
import type { ProxyDoc, ProxyStatus } from '../domain/status.js';
import type { Provider, ProviderHealth } from '../providers/contract.js';
import { recentChanges, type CheckBatch } from './batch.js';
import type { Decision, Observation } from './decision.js';
import { egressDue } from './egress.js';
import { statusChanged } from './status.js';

/**
 * The observation stored in a settled proxy's status, when a sweep may use it instead of asking
 * the provider: only for providers whose observations arrive by report and say what changed
 * (`probesRemotely` and `changes`: the relay-backed ones), while the provider is not down, the
 * proxy is Ready, healthy and current, its instance has not changed since its last probe on
 * record, and that probe is younger than the refresh period (so the refresh still reads).
 *
 * @param batch - the check batch: the provider's recent changes are read once per batch
 * @returns undefined when the provider must be asked; `'changed'` when it must be asked because
 * the instance changed since the probe on record (the status is then rewritten with a newer probe
 * as soon as the provider has one, so that later sweeps can rely on it again)
 */
export async function storedObservation(
  doc: ProxyDoc,
  provider: Provider,
  installationId: string,
  health: ProviderHealth | undefined,
  now: number,
  refreshMs: number,
  batch: CheckBatch,
): Promise<Observation | 'changed' | undefined> {
  const { status } = doc;
  const { instance, health: probed } = status;
  if (!provider.probesRemotely || !provider.changes || health?.ok === false) return undefined;
  if (doc.deletionRequestedAt !== undefined || doc.lease !== undefined) return undefined;
  if (status.phase !== 'Ready' || status.observedGeneration !== doc.generation) return undefined;
  if (!instance || instance.state !== 'Running' || !probed?.ok) return undefined;
  const probedAt = Date.parse(probed.lastProbeAt);
  const age = now - probedAt;
  if (!(age >= 0 && age < refreshMs)) return undefined;
  const changed = await recentChanges(batch, provider);
  if (!changed) return undefined;
  if (changed(instance.name, probedAt)) return 'changed';
  return {
    kind: 'found',
    instance: {
      name: instance.name,
      proxy: doc.metadata.name,
      installationId,
      specHash: instance.specHash,
      state: instance.state,
      ip: instance.ip,
      port: instance.port,
      ...(instance.tlsPort !== undefined && { tlsPort: instance.tlsPort }),
      createdAt: Date.parse(instance.createdAt),
      health: probed,
    },
  };
}

/**
 * True when a decision taken on the stored observation changes nothing: no action, no failure, the
 * same phase, no status write and no egress verification due. Anything else must be decided again
 * on a fresh observation.
 */
export function changesNothing(
  decision: Decision,
  previous: ProxyStatus,
  next: ProxyStatus,
  now: number,
  refreshMs: number,
): boolean {
  return (
    decision.action === 'none' &&
    decision.failure === undefined &&
    decision.replace === undefined &&
    decision.recheckAfterMs === undefined &&
    next.phase === previous.phase &&
    !statusChanged(previous, next, now, refreshMs) &&
    !egressDue(previous, next)
  );
}
