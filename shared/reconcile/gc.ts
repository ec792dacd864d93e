/** Garbage collection: delete this installation's instances that no proxy owns, never anyone else's. */
import type { Config } from '../config/schema.js';
import { instanceName } from '../domain/names.js';
import { asEgressError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Instance, Provider, Registry } from '../providers/contract.js';
import type { ProviderStatusRepository, ProxyRepository } from '../store/ports.js';
import { currentHealth } from '../health.js';
import { recordGcDeletion } from '../telemetry/metrics.js';
import type { InventoryCache } from './gc-inventory.js';
import type { SweepCache } from './sweep-cache.js';

/** The owner set is one cached "page" of the whole collection. */
const ALL_PROXIES = 1_000_000;

export interface GcDeps {
  config: Config;
  registry: Registry;
  proxies: ProxyRepository;
  logger: Logger;
  now?: () => number;
  /** The provider-health monitor's verdicts: GC never deletes on a provider known to be down. */
  providerStatus?: ProviderStatusRepository;
  /** This instance's cache of the proxy documents (kept across passes); without it every pass reads every name. */
  owners?: SweepCache;
  /** This instance's copy of each provider's listing (kept across passes); without it every pass lists whole. */
  inventory?: InventoryCache;
}

export interface GcReport {
  provider: string;
  /** Why the provider was skipped (down, or its listing failed or was partial). */
  skipped?: string;
  listed: number;
  deleted: string[];
}

/**
 * One GC pass over every provider. A provider whose health check fails or whose listing fails is
 * skipped entirely: GC never deletes on the strength of a failed listing. An instance is
 * collected when it carries this installation's id and no proxy document owns it, and it is older
 * than the grace period or has a zero `createdAt` (rule created-at-nonzero). One known only from
 * the inventory cache is read again first, and collected only if it still is collectable.
 */
export async function collectGarbage(deps: GcDeps): Promise<GcReport[]> {
  const now = deps.now ?? Date.now;
  const owners = await ownerNames(deps);
  const reports: GcReport[] = [];
  for (const provider of deps.registry.all()) {
    const report: GcReport = { provider: provider.name, listed: 0, deleted: [] };
    reports.push(report);
    try {
      const intervalMs = deps.config.healthIntervalSeconds * 1000;
      const health = await currentHealth(provider, { providerStatus: deps.providerStatus, intervalMs, now: now() });
      if (health && !health.ok) {
        report.skipped = `provider down: ${health.message}`;
        continue;
      }
      const listing = deps.inventory
        ? await deps.inventory.list(provider)
        : { instances: await provider.list(), cached: new Set<string>() };
      report.listed = listing.instances.length;
      const collectable = (i: Instance) => isCollectable(deps, owners, i, now());
      for (const listed of listing.instances) {
        if (!collectable(listed)) continue;
        const instance = listing.cached.has(listed.name) ? await reread(deps, provider, listed.name) : listed;
        if (instance && collectable(instance)) await collect(deps, provider, instance, report);
      }
    } catch (err) {
      report.skipped = `listing failed: ${asEgressError(err).message}`;
      deps.logger.warn('gc skipped a provider', { provider: provider.name, reason: report.skipped });
    }
  }
  return reports;
}

/** This installation's, owned by no proxy document, and past the grace period (or with a zero `createdAt`). */
function isCollectable(deps: GcDeps, owners: Set<string>, instance: Instance, now: number): boolean {
  if (instance.installationId !== deps.config.installationId) return false;
  const owned =
    owners.has(instance.proxy) && instanceName(deps.config.installationId, instance.proxy) === instance.name;
  const old = instance.createdAt <= 0 || now - instance.createdAt > deps.config.gcGraceSeconds * 1000;
  return !owned && old;
}

/** An instance known only from the inventory cache, as the provider has it now; undefined when gone or unreadable. */
async function reread(deps: GcDeps, provider: Provider, name: string): Promise<Instance | undefined> {
  try {
    return await provider.get(name);
  } catch (err) {
    const e = asEgressError(err);
    if (e.code !== 'NotFound')
      deps.logger.warn('gc re-read failed', { provider: provider.name, instance: name, error: e.message });
    return undefined;
  }
}

/** Deletes one collectable instance; a failed delete is logged and left for the next pass. */
async function collect(deps: GcDeps, provider: Provider, instance: Instance, report: GcReport): Promise<void> {
  try {
    await provider.delete(instance.name);
    report.deleted.push(instance.name);
    recordGcDeletion(provider.name, 'deleted');
    deps.logger.info('gc deleted an unowned instance', {
      provider: provider.name,
      instance: instance.name,
      proxy: instance.proxy,
    });
  } catch (err) {
    recordGcDeletion(provider.name, 'failed');
    deps.logger.warn('gc delete failed', {
      provider: provider.name,
      instance: instance.name,
      error: asEgressError(err).message,
    });
  }
}

/**
 * The names of every proxy document. From the cache only when it was brought up to date by its
 * changes query: the range's count then equals the cached and changed documents, so no document is
 * missing (a corrupt one, which the cache cannot hold, would make the count disagree). A name gone
 * since counts as an owner for this pass (its instance waits a pass: the next count disagrees); a
 * proxy created after the count has an instance younger than the grace period. When the cache was
 * (re)filled, `names()` is asked as before: it also lists documents that do not parse.
 */
async function ownerNames(deps: GcDeps): Promise<Set<string>> {
  if (!deps.owners) return deps.proxies.names();
  const page = await deps.owners.page(deps.proxies, null, ALL_PROXIES, deps.logger);
  if (page.source !== 'changes') return deps.proxies.names();
  return new Set(page.items.map((item) => item.doc.metadata.name));
}
