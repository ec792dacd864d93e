/**
 * The world the guarantee suites drive, for one provider type (its kit's ground, test/kits/: a real
 * relay with real proxy processes or libvirt's test driver, or a wire-level fake cloud), over the
 * emulators, and the functions' handlers wired to a crash-point store, a counting provider
 * registry and buses the test controls.
 */
import type { Bus } from '../../../shared/bus/pubsub.js';
import type { Config } from '../../../shared/config/schema.js';
import { canonicalJson, specHash } from '../../../shared/domain/spec-hash.js';
import { instanceName } from '../../../shared/domain/names.js';
import type { ProxySpec } from '../../../shared/domain/proxy.js';
import type { ProxyDoc } from '../../../shared/domain/status.js';
import type { Logger } from '../../../shared/logger.js';
import type { Provider, Registry } from '../../../shared/providers/contract.js';
import { createRegistry } from '../../../shared/providers/registry.js';
import type { CheckDeps } from '../../../shared/reconcile/check.js';
import { FollowUpLedger } from '../../../shared/reconcile/follow-up.js';
import { SweepCache } from '../../../shared/reconcile/sweep-cache.js';
import type { GcDeps } from '../../../shared/reconcile/gc.js';
import { resolvePlacement } from '../../../shared/reconcile/reconcile.js';
import type { RequestDeps } from '../../../shared/requests.js';
import type { CommandDoc } from '../../../shared/store/records.js';
import type { RelayHarness, RelayHarnessOptions } from '../../support/relay-harness.js';
import { countingRegistry, ProviderStats, type ProviderHooks } from './counting-provider.js';
import { FaultyProxyStore } from './faulty-store.js';
import { guaranteeKit, type ProviderKind } from '../../kits/registry.js';
import type { Item } from './grounds.js';
import { INSTALLATION, PROVIDER, usePlacement, type Expected } from './subject.js';

export { INSTALLATION, PROVIDER, type Expected } from './subject.js';

export interface WorldOptions {
  /** The provider type under test (default `process`). */
  kind?: ProviderKind;
  /** The relay id (also the log file and project prefix). */
  relay: string;
  /** Proxy ports of this world's relay; keep them apart from other files'. */
  ports: [number, number];
  /** Config fields for the functions' side. */
  config?: Record<string, unknown>;
  /** Options of a relay-backed provider (heartbeatTimeoutSeconds, commandResendSeconds). */
  providerOptions?: Record<string, unknown>;
  /** The relay's hooks (relay-backed providers; `onLog` everywhere). */
  harness?: RelayHarnessOptions;
  /** Around every provider call the functions make. */
  hooks?: ProviderHooks;
  /** The bus a relay-backed provider publishes its commands on (wrap it to duplicate or lose commands). */
  commandBus?: (bus: Bus) => Bus;
}

/** What one proxy looks like everywhere at once. */
export interface Snapshot {
  name: string;
  instance: string;
  doc: ProxyDoc | undefined;
  credentials: boolean;
  item: Item | undefined;
  command: CommandDoc | undefined;
}

/** The end state a proxy must reach: gone, or serving exactly this spec and labels. */

export interface World {
  kind: ProviderKind;
  config: Config;
  logger: Logger;
  /** The bus of the relay (relay-backed providers), or one that takes nothing. */
  bus: Bus;
  /** The relay, for relay-backed providers. */
  h: RelayHarness | undefined;
  proxies: FaultyProxyStore;
  stats: ProviderStats;
  registry: Registry;
  /** The provider under test, uncounted and without faults (to make orphans behind the control plane's back). */
  raw: Provider;
  relay: string;
  requestDeps(bus: Bus): RequestDeps;
  checkDeps(bus: Bus): CheckDeps;
  gcDeps(now?: () => number): GcDeps;
  /** The instance's spec hash for a spec (the resolved placement, as the reconciler computes it). */
  hashOf(spec: ProxySpec): string;
  snapshot(name: string): Promise<Snapshot>;
  /** What is wrong with `name` against `expected` (empty when it is there). */
  problems(name: string, expected: Expected): Promise<string[]>;
  /** Names of the instances the backend keeps (the relay's inventory, the fake's VMs or Pods). */
  inventory(): Promise<string[]>;
  /** Instances per name where they really are: proxy processes, libvirt domains, the fake's VMs or Pods. */
  processes(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

export const iname = (proxy: string) => instanceName(INSTALLATION, proxy);

export async function startWorld(options: WorldOptions): Promise<World> {
  const { relay } = options;
  const kind = options.kind ?? 'process';
  const kit = guaranteeKit(kind);
  const ground = await kit.start({
    provider: PROVIDER,
    name: relay,
    ports: options.ports,
    config: { backoffBaseSeconds: 0.5, backoffMaxSeconds: 2, leaseSeconds: 5, ...options.config },
    relayOptions: options.providerOptions ?? {},
    harness: options.harness ?? {},
  });
  usePlacement(ground.placement);
  const { config, logger, harness: h } = ground;
  const proxies = new FaultyProxyStore(ground.db, logger);
  const stats = new ProviderStats();
  const commandBus = options.commandBus?.(ground.bus) ?? ground.bus;
  const registryDeps = {
    config,
    relays: ground.relays,
    logger,
    ...(ground.relayKeys && { relayKeys: ground.relayKeys }),
  };
  const registry = countingRegistry(createRegistry({ ...registryDeps, bus: commandBus }), stats, options.hooks);
  const provider = registry.get(PROVIDER);
  const raw = createRegistry({ ...registryDeps, bus: ground.bus }).get(PROVIDER);
  if (!provider || !raw) throw new Error('no provider');

  // One warm check instance's cache for every sweep of the world: sweeps run on cached pages.
  const sweepCache = new SweepCache();
  // And its follow-ups on their way: chains of looks at one proxy merge, as in the function.
  const followUps = new FollowUpLedger();
  // And one warm gc instance's owner cache.
  const gcOwners = new SweepCache();
  const world: World = {
    kind,
    config,
    logger,
    bus: ground.bus,
    h,
    proxies,
    stats,
    registry,
    raw,
    relay,
    requestDeps: (bus) => ({ proxies, bus, logger, maxEvents: config.maxEvents }),
    checkDeps: (bus) => ({
      config,
      proxies,
      registry,
      logger,
      bus,
      rolloutCounts: (p) => proxies.rolloutCounts(p),
      sweepCache,
      followUps,
    }),
    gcDeps: (now) => ({ config, proxies, registry, logger, owners: gcOwners, ...(now ? { now } : {}) }),
    hashOf: (spec) => specHash(spec, resolvePlacement(config, provider, spec.placement)),
    async snapshot(name) {
      const instance = iname(name);
      const [doc, credentials, item, command] = await Promise.all([
        proxies.get(name),
        proxies.credentials(name),
        ground.item(instance),
        h?.relays.command(relay, instance),
      ]);
      return { name, instance, doc: doc?.doc, credentials: credentials !== undefined, item, command };
    },
    async problems(name, expected) {
      const s = await world.snapshot(name);
      const out: string[] = [];
      const live = s.doc?.lease && s.doc.lease.until > Date.now();
      if (!expected.exists) {
        if (s.doc)
          out.push(`document still there (phase ${s.doc.status.phase}, deleting=${!!s.doc.deletionRequestedAt})`);
        if (s.credentials && !s.doc) out.push('credentials left behind');
        if (s.item) out.push(`instance ${s.instance} still in the inventory (${s.item.state})`);
        // A create still on its way would leak an instance (a delete whose result was lost is harmless).
        if (s.command?.kind === 'create' && !s.command.done) out.push('a create command is still pending');
        return out;
      }
      const hash = world.hashOf(expected.spec);
      if (!s.doc) return [`document missing (expected spec ${canonicalJson(expected.spec)})`];
      if (s.doc.deletionRequestedAt) out.push('document is marked for deletion');
      if (canonicalJson(s.doc.spec) !== canonicalJson(expected.spec))
        out.push(`spec ${canonicalJson(s.doc.spec)} is not the last applied ${canonicalJson(expected.spec)}`);
      if (canonicalJson(s.doc.metadata.labels) !== canonicalJson(expected.labels))
        out.push(`labels ${canonicalJson(s.doc.metadata.labels)} are not ${canonicalJson(expected.labels)}`);
      if (s.doc.status.phase !== kit.servingPhase) out.push(`phase ${s.doc.status.phase}, want ${kit.servingPhase}`);
      if (s.doc.status.observedGeneration !== s.doc.generation)
        out.push(`observedGeneration ${s.doc.status.observedGeneration} != generation ${s.doc.generation}`);
      if (s.doc.status.instance?.specHash !== hash) out.push(`status instance hash is not ${hash}`);
      if (!s.item) out.push('no instance in the inventory');
      else if (s.item.state !== 'Running' || s.item.specHash !== hash)
        out.push(`inventory instance ${s.item.state} with hash ${s.item.specHash}, want Running ${hash}`);
      if (!s.credentials) out.push('credentials missing');
      if (live) out.push('a lease is held');
      return out;
    },
    inventory: () => ground.inventory(),
    processes: () => ground.counts(),
    close: () => ground.close(),
  };
  return world;
}
