/** What the HTTP API's routes are given (shared/api/handler.ts and the route modules beside it). */
import type { Bus } from '../bus/pubsub.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { DiscoveryCache } from './discovery-cache.js';
import type {
  DemandRepository,
  PoolRepository,
  ProviderStatusRepository,
  ProxyRepository,
  RelayRepository,
  ReportRepository,
} from '../store/ports.js';

export interface ApiDeps {
  config: Config;
  proxies: ProxyRepository;
  relays: RelayRepository;
  reports: ReportRepository;
  providerStatus: ProviderStatusRepository;
  /** Pools; without it the pool routes answer 404. */
  pools?: PoolRepository;
  /** The gateways' demand reports; without it `POST /v1/pools/{name}/demand` answers 404. */
  demand?: DemandRepository;
  bus: Bus;
  logger: Logger;
  /** Discovery's reads kept a moment (the `api` function has one); absent, every discovery reads the store. */
  discoveryCache?: DiscoveryCache;
  /** The dashboard page served at `GET /`. */
  dashboardHtml?: string;
  now?: () => number;
}
