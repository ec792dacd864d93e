/**
 * The world the guarantee suites drive: a real relay with real proxy processes over the emulators
 * (test/support/relay-harness.ts), and the functions' handlers wired to a crash-point store, a
 * counting provider registry and buses the test controls.
 */
import type { Bus } from '../../../shared/bus/pubsub.js';
import { canonicalJson, specHash } from '../../../shared/domain/spec-hash.js';
import { instanceName } from '../../../shared/domain/names.js';
import type { ProxySpec } from '../../../shared/domain/proxy.js';
import type { ProxyDoc } from '../../../shared/domain/status.js';
import type { Registry } from '../../../shared/providers/contract.js';
import { createRegistry } from '../../../shared/providers/registry.js';
import type { CheckDeps } from '../../../shared/reconcile/check.js';
import type { GcDeps } from '../../../shared/reconcile/gc.js';
import { resolvePlacement } from '../../../shared/reconcile/reconcile.js';
import type { InventoryItem } from '../../../shared/relay/protocol.js';
import type { RequestDeps } from '../../../shared/requests.js';
import type { CommandDoc } from '../../../shared/store/relays.js';
import { startRelayHarness, type RelayHarness, type RelayHarnessOptions } from '../../support/relay-harness.js';
import { countingRegistry, ProviderStats, type ProviderHooks } from './counting-provider.js';
import { FaultyProxyStore } from './faulty-store.js';
import { proxyProcesses } from './processes.js';

export const PROVIDER = 'proc';
export const INSTALLATION = 'it';

export interface WorldOptions {
  /** The relay id (also the log file and project prefix). */
  relay: string;
  /** Proxy ports of this world's relay; keep them apart from other files'. */
  ports: [number, number];
  /** Config fields for the functions' side. */
  config?: Record<string, unknown>;
  /** Options of the `proc` provider (heartbeatTimeoutSeconds, commandResendSeconds). */
  providerOptions?: Record<string, unknown>;
  harness?: RelayHarnessOptions;
  /** Around every provider call the functions make. */
  hooks?: ProviderHooks;
  /** The bus the provider publishes relay commands on (wrap it to duplicate or lose commands). */
  commandBus?: (bus: Bus) => Bus;
}

/** What one proxy looks like everywhere at once. */
export interface Snapshot {
  name: string;
  instance: string;
  doc: ProxyDoc | undefined;
  credentials: boolean;
  item: InventoryItem | undefined;
  command: CommandDoc | undefined;
}

/** The end state a proxy must reach: gone, or serving exactly this spec and labels. */
export type Expected = { exists: false } | { exists: true; spec: ProxySpec; labels: Record<string, string> };

export interface World {
  h: RelayHarness;
  proxies: FaultyProxyStore;
  stats: ProviderStats;
  registry: Registry;
  relay: string;
  requestDeps(bus: Bus): RequestDeps;
  checkDeps(bus: Bus): CheckDeps;
  gcDeps(now?: () => number): GcDeps;
  /** The instance's spec hash for a spec (the resolved placement, as the reconciler computes it). */
  hashOf(spec: ProxySpec): string;
  snapshot(name: string): Promise<Snapshot>;
  /** What is wrong with `name` against `expected` (empty when it is there). */
  problems(name: string, expected: Expected): Promise<string[]>;
  /** Live proxy processes per instance name. */
  processes(): Promise<Map<string, number>>;
  close(): Promise<void>;
}

export const iname = (proxy: string) => instanceName(INSTALLATION, proxy);

export async function startWorld(options: WorldOptions): Promise<World> {
  const { relay } = options;
  const h = await startRelayHarness(
    relay,
    options.ports,
    {
      backoffBaseSeconds: 0.5,
      backoffMaxSeconds: 2,
      leaseSeconds: 5,
      ...options.config,
      providers: [
        {
          name: PROVIDER,
          type: 'process',
          relay,
          catalogue: { loopback: { bindAddress: '127.0.0.1' } },
          rolloutBudget: 50,
          options: { heartbeatTimeoutSeconds: 30, ...options.providerOptions },
        },
      ],
    },
    options.harness,
  );
  const proxies = new FaultyProxyStore(h.db, h.logger);
  const stats = new ProviderStats();
  const commandBus = options.commandBus?.(h.bus) ?? h.bus;
  const inner = createRegistry({
    config: h.config,
    relays: h.relays,
    bus: commandBus,
    logger: h.logger,
    relayKeys: h.relayKeys,
  });
  const registry = countingRegistry(inner, stats, options.hooks);
  const provider = registry.get(PROVIDER);
  if (!provider) throw new Error('no provider');

  const world: World = {
    h,
    proxies,
    stats,
    registry,
    relay,
    requestDeps: (bus) => ({ proxies, bus, logger: h.logger, maxEvents: h.config.maxEvents }),
    checkDeps: (bus) => ({
      config: h.config,
      proxies,
      registry,
      logger: h.logger,
      bus,
      countReplacing: (p) => proxies.countReplacing(p),
    }),
    gcDeps: (now) => ({ config: h.config, proxies, registry, logger: h.logger, ...(now ? { now } : {}) }),
    hashOf: (spec) => specHash(spec, resolvePlacement(h.config, provider, spec.placement)),
    async snapshot(name) {
      const instance = iname(name);
      const [doc, credentials, item, command] = await Promise.all([
        proxies.get(name),
        proxies.credentials(name),
        h.relays.instance(relay, instance),
        h.relays.command(relay, instance),
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
      if (s.doc.status.phase !== 'Ready') out.push(`phase ${s.doc.status.phase}`);
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
    processes: () => proxyProcesses(h.stateDir),
    close: () => h.close(),
  };
  return world;
}
