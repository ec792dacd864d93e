/** The Firestore store held to the store contract (test/support/store-contract.ts), on the emulator. */
import { createLogger } from '../../shared/logger.js';
import { createFirestore } from '../../shared/store/firestore.js';
import { PoolStore } from '../../shared/store/pools.js';
import { ProviderStore } from '../../shared/store/providers.js';
import { ProxyStore } from '../../shared/store/proxies.js';
import { RelayStore } from '../../shared/store/relays.js';
import { ReportStore } from '../../shared/store/reports.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { storeContract } from '../support/store-contract.js';

const logger = createLogger({ write: () => undefined });

storeContract('firestore', (heartbeatMs) => {
  // A project of its own per test: an empty store.
  const db = createFirestore(emulatorEnv('store').projectId);
  return Promise.resolve({
    proxies: new ProxyStore(db, logger),
    relays: new RelayStore(db, logger, heartbeatMs),
    pools: new PoolStore(db, logger),
    providerStatus: new ProviderStore(db),
    reports: new ReportStore(db),
    close: () => db.terminate(),
  });
});
