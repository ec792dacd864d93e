/** The Firestore store held to the store contract (test/support/store-contract.ts), on the emulator. */
import { createLogger } from '../../shared/logger.js';
import { createFirestore } from '../../shared/store/firestore.js';
import { ProxyStore } from '../../shared/store/proxies.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { storeContract } from '../support/store-contract.js';

const logger = createLogger({ write: () => undefined });

storeContract('firestore', () => {
  // A project of its own per test: an empty store.
  const db = createFirestore(emulatorEnv('store').projectId);
  return Promise.resolve({ proxies: new ProxyStore(db, logger), close: () => db.terminate() });
});
