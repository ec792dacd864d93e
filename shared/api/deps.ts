/** What the HTTP API's routes are given (shared/api/handler.ts and the route modules beside it). */
import type { Bus } from '../bus/pubsub.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { PoolStore } from '../store/pools.js';
import type { ProviderStore } from '../store/providers.js';
import type { ProxyStore } from '../store/proxies.js';
import type { RelayStore } from '../store/relays.js';
import type { ReportStore } from '../store/reports.js';

export interface ApiDeps {
  config: Config;
  proxies: ProxyStore;
  relays: RelayStore;
  reports: ReportStore;
  providerStatus: ProviderStore;
  /** Pools; without it the pool routes answer 404. */
  pools?: PoolStore;
  bus: Bus;
  logger: Logger;
  /** The dashboard page served at `GET /`. */
  dashboardHtml?: string;
  now?: () => number;
}
