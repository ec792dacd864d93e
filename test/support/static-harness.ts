/**
 * The `static` provider as the functions build it (config → registry, the Firestore claim store on
 * the emulator), over real tinyproxies standing in for a vendor's endpoints.
 */
import { parseConfig } from '../../shared/config/load.js';
import type { Config } from '../../shared/config/schema.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import type { Provider, Registry } from '../../shared/providers/contract.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import { COLLECTIONS } from '../../shared/store/firestore/client.js';
import type { Firestore } from '@google-cloud/firestore';
import { FirestoreDemandRepository } from '../../shared/store/firestore/demand.js';
import { FirestorePoolRepository } from '../../shared/store/firestore/pools.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreStaticClaimRepository } from '../../shared/store/firestore/static-claims.js';
import { startVendor, type Vendor } from './static-vendor.js';
import { startCheckWorld } from './check-world.js';

export interface StaticHarness {
  vendor: Vendor;
  config: Config;
  registry: Registry;
  /** The provider named `vendor` (the first, with `split`). */
  provider: Provider;
  pools: FirestorePoolRepository;
  /** The gateways' demand and usage documents (`poolDemand`). */
  demand: FirestoreDemandRepository;
  db: Firestore;
  proxies: FirestoreProxyRepository;
  claims: FirestoreStaticClaimRepository;
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
  const vendor = await startVendor(count);
  const echo = await startEchoServer();
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
  let claims: FirestoreStaticClaimRepository | undefined;
  const world = await startCheckWorld(name, config, (db, logger) => ({
    claims: (claims = new FirestoreStaticClaimRepository(db, logger)),
  }));
  const { db, registry, proxies, providerStatus, bus, logger } = world;
  const first = config.providers[0]?.name ?? '';
  const provider = registry.get(first);
  if (!provider || !claims) throw new Error(`the registry built no static provider: ${registry.missing(first)}`);
  return {
    vendor,
    config,
    registry,
    provider,
    proxies,
    claims,
    pools: new FirestorePoolRepository(db, logger),
    demand: new FirestoreDemandRepository(db),
    db,
    echo,
    deps: { config, proxies, registry, logger, bus, providerStatus, rolloutCounts: (p) => proxies.rolloutCounts(p) },
    async resetClaims() {
      await db.recursiveDelete(db.collection(COLLECTIONS.staticClaims));
    },
    async close() {
      await vendor.close();
      await echo.close();
      await world.close();
    },
  };
}
