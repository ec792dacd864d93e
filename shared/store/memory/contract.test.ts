/** The in-memory store held to the store contract (test/support/store-contract.ts). */
import { ManualClock } from '../clock.js';
import { storeContract } from '../../../test/support/store-contract.js';
import { MemoryPoolRepository } from './pools.js';
import { MemoryProviderStatusRepository } from './providers.js';
import { MemoryProxyRepository } from './proxies.js';
import { MemoryRelayRepository } from './relays.js';
import { MemoryReportRepository } from './reports.js';
import { MemoryState } from './state.js';

storeContract('memory', (heartbeatMs) => {
  const state = new MemoryState(new ManualClock());
  return Promise.resolve({
    proxies: new MemoryProxyRepository(state.clock, state),
    relays: new MemoryRelayRepository(state.clock, heartbeatMs, state),
    pools: new MemoryPoolRepository(state),
    providerStatus: new MemoryProviderStatusRepository(),
    reports: new MemoryReportRepository(state),
    close: () => Promise.resolve(),
  });
});
