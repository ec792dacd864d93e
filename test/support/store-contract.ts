/**
 * One contract for every store implementation (Firestore and memory): each runs this suite under
 * `describe('store contract: <name>')`, on an empty store per test. Its cases are in one file per
 * repository: store-contract-{relays,inventory,pools,provider-status,reports,changes,proxies}.ts.
 */
import { afterEach, describe } from 'vitest';
import type {
  PoolRepository,
  ProviderStatusRepository,
  ProxyRepository,
  RelayRepository,
  ReportRepository,
} from '../../shared/store/ports.js';
import { changesContract } from './store-contract-changes.js';
import { inventoryContract } from './store-contract-inventory.js';
import { poolContract } from './store-contract-pools.js';
import { providerStatusContract } from './store-contract-provider-status.js';
import { proxyContract } from './store-contract-proxies.js';
import { relayContract } from './store-contract-relays.js';
import { reportContract } from './store-contract-reports.js';

/** The repositories of one store, sharing one database. */
export interface Stores {
  proxies: ProxyRepository;
  relays: RelayRepository;
  pools: PoolRepository;
  providerStatus: ProviderStatusRepository;
  reports: ReportRepository;
}

/**
 * A fresh, empty store; `close` releases it.
 *
 * @param heartbeatMs - the relay repository's probe heartbeat (its default when absent)
 */
export type MakeStore = (heartbeatMs?: number) => Promise<Stores & { close(): Promise<void> }>;

export function storeContract(name: string, make: MakeStore): void {
  describe(`store contract: ${name}`, () => {
    const closing: (() => Promise<void>)[] = [];
    afterEach(async () => {
      await Promise.all(closing.splice(0).map((close) => close()));
    });
    const open = async (heartbeatMs?: number): Promise<Stores> => {
      const store = await make(heartbeatMs);
      closing.push(() => store.close());
      return store;
    };
    relayContract(async (heartbeatMs) => (await open(heartbeatMs)).relays);
    inventoryContract(async (heartbeatMs) => (await open(heartbeatMs)).relays);
    poolContract(open);
    providerStatusContract(async () => (await open()).providerStatus);
    reportContract(open);
    changesContract(open);
    proxyContract(async () => (await open()).proxies);
  });
}
