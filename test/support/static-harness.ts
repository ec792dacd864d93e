/**
 * The `static` provider as the functions build it (config → registry, the Firestore claim store on
 * the emulator), over real tinyproxies standing in for a vendor's endpoints.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import { PubSub } from '@google-cloud/pubsub';
import { createPubSubBus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import type { Config } from '../../shared/config/schema.js';
import { createLogger } from '../../shared/logger.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import type { Provider, Registry } from '../../shared/providers/contract.js';
import { createRegistry } from '../../shared/providers/registry.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import { COLLECTIONS, createFirestore } from '../../shared/store/firestore.js';
import { PoolStore } from '../../shared/store/pools.js';
import { ProviderStore } from '../../shared/store/providers.js';
import { ProxyStore } from '../../shared/store/proxies.js';
import { RelayStore } from '../../shared/store/relays.js';
import { StaticClaimStore } from '../../shared/store/static-claims.js';
import { emulatorEnv } from './emulator-env.js';
import { startVendor, type Vendor } from './static-vendor.js';

export interface StaticHarness {
  vendor: Vendor;
  config: Config;
  registry: Registry;
  /** The provider named `vendor` (the first, with `split`). */
  provider: Provider;
  pools: PoolStore;
  proxies: ProxyStore;
  claims: StaticClaimStore;
  echo: EchoServer;
  /** What `runCheck` needs. */
  deps: CheckDeps;
  /** Deletes every claim document: all endpoints free and never released. */
  resetClaims(): Promise<void>;
  close(): Promise<void>;
}

/** More than the one provider `vendor`: each named provider gets these endpoints (indices) and options. */
export type StaticProviders = Record<
  string,
  { endpoints: number[]; options?: Record<string, unknown>; hourlyUsd?: number }
>;

/**
 * @param name - test name: the project id prefix and the log file
 * @param count - how many vendor endpoints (tinyproxies) to start
 * @param options - the provider's options besides `endpoints`
 * @param countries - each endpoint's country, by index (default none)
 * @param split - several static providers over the endpoints instead of the one `vendor`
 * @param overrides - config fields
 */
export async function startStaticHarness(
  name: string,
  count: number,
  options: Record<string, unknown> = {},
  countries: (string | undefined)[] = [],
  split?: StaticProviders,
  overrides: Record<string, unknown> = {},
): Promise<StaticHarness> {
  const emu = emulatorEnv(name);
  const vendor = await startVendor(count);
  const echo = await startEchoServer();
  mkdirSync('test-results', { recursive: true });
  const logger = createLogger({ write: (l) => appendFileSync(`test-results/${name}.log`, `${l}\n`), level: 'DEBUG' });
  const endpoints = vendor.endpoints.map(({ host, port, username, password }, i) => ({
    host,
    port,
    username,
    password,
    labels: { slot: String(i) },
    ...(countries[i] && { country: countries[i] }),
  }));
  const config = parseConfig({
    installationId: 'it',
    echoUrl: echo.url,
    backoffBaseSeconds: 1,
    backoffMaxSeconds: 4,
    probeTimeoutSeconds: 2,
    providers: Object.entries(split ?? { vendor: { endpoints: endpoints.map((_, i) => i) } }).map(([provider, p]) => ({
      name: provider,
      type: 'static',
      options: {
        endpoints: p.endpoints.map((i) => ({
          ...endpoints[i],
          ...(p.hourlyUsd !== undefined && { hourlyUsd: p.hourlyUsd }),
        })),
        ...options,
        ...p.options,
      },
    })),
    ...overrides,
  });
  const db = createFirestore(emu.projectId);
  const pubsub = new PubSub({ projectId: emu.projectId });
  await pubsub.createTopic('proxy-checks');
  const bus = createPubSubBus(pubsub);
  const claims = new StaticClaimStore(db, logger);
  const registry = createRegistry({ config, relays: new RelayStore(db, logger), bus, logger, claims });
  const first = config.providers[0]?.name ?? '';
  const provider = registry.get(first);
  if (!provider) throw new Error(`the registry built no static provider: ${registry.missing(first)}`);
  const proxies = new ProxyStore(db, logger);
  const providerStatus = new ProviderStore(db);
  return {
    vendor,
    config,
    registry,
    provider,
    proxies,
    claims,
    pools: new PoolStore(db, logger),
    echo,
    deps: { config, proxies, registry, logger, bus, providerStatus, countReplacing: (p) => proxies.countReplacing(p) },
    async resetClaims() {
      await db.recursiveDelete(db.collection(COLLECTIONS.staticClaims));
    },
    async close() {
      await vendor.close();
      await echo.close();
      await pubsub.close();
      await db.terminate();
    },
  };
}
