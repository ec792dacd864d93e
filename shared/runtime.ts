/** The functions' shared runtime: config, clients, stores and providers, built once per process. */
import { PubSub } from '@google-cloud/pubsub';
import { createPubSubBus, type Bus } from './bus/pubsub.js';
import { loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { createLogger, type Logger } from './logger.js';
import type { Registry } from './providers/contract.js';
import { createRegistry } from './providers/registry.js';
import { relayKeysFromEnv, type RelayKeyring } from './relay/signature.js';
import { createFirestore } from './store/firestore.js';
import { ProxyStore } from './store/proxies.js';
import { PoolStore } from './store/pools.js';
import { ProviderStore } from './store/providers.js';
import { RelayStore } from './store/relays.js';
import { ReportStore } from './store/reports.js';

export interface Runtime {
  config: Config;
  logger: Logger;
  bus: Bus;
  proxies: ProxyStore;
  relays: RelayStore;
  /** From `EGRESS_RELAY_KEYS`; when set, relay reports and commands are signed and checked. */
  relayKeys: RelayKeyring | undefined;
  reports: ReportStore;
  registry: Registry;
  providerStatus: ProviderStore;
  pools: PoolStore;
  maxEvents: number;
  countReplacing: (provider: string) => Promise<number>;
}

/** Builds a runtime from an environment (tests build their own with their own env). */
export function createRuntime(
  env: Record<string, string | undefined> = process.env,
  base: Record<string, unknown> = {},
): Runtime {
  const config = loadConfig(env);
  const logger = createLogger({ project: config.project, base });
  const db = createFirestore(config.project);
  const bus = createPubSubBus(new PubSub({ projectId: config.project }));
  const proxies = new ProxyStore(db, logger);
  const relays = new RelayStore(db, logger, config.heartbeatSeconds * 1000);
  const relayKeys = relayKeysFromEnv(env);
  if (!relayKeys) logger.warn('relay messages are not authenticated: EGRESS_RELAY_KEYS is not set');
  const registry = createRegistry({ config, relays, bus, logger, relayKeys });
  return {
    config,
    logger,
    bus,
    proxies,
    relays,
    relayKeys,
    reports: new ReportStore(db),
    registry,
    providerStatus: new ProviderStore(db),
    pools: new PoolStore(db, logger),
    maxEvents: config.maxEvents,
    countReplacing: (p) => proxies.countReplacing(p),
  };
}

let memo: Runtime | undefined;

/** The process-wide runtime, created on first use (so importing a function costs nothing). */
export function getRuntime(functionName: string): Runtime {
  memo ??= createRuntime(process.env, { function: functionName });
  return memo;
}
