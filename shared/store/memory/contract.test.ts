/** The in-memory store held to the store contract (test/support/store-contract.ts). */
import { ManualClock } from '../clock.js';
import { storeContract } from '../../../test/support/store-contract.js';
import { MemoryProxyRepository } from './proxies.js';

storeContract('memory', () =>
  Promise.resolve({ proxies: new MemoryProxyRepository(new ManualClock()), close: () => Promise.resolve() }),
);
