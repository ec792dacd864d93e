/** The functions' shared runtime: config, clients, stores and providers, built once per process. */
import { createRestBus } from './bus/rest.js';
import type { Bus } from './bus/pubsub.js';
import { loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { createLogger, type Logger } from './logger.js';
import type { Registry } from './providers/contract.js';
import { createRegistry } from './providers/registry.js';
import {
  MISSING_KEYS_REASON,
  RELAY_KEYS_ENV,
  relayKeysFromEnv,
  unsignedRelaysAllowed,
  type RelayKeyring,
} from './wire/signature.js';
import { createFirestore } from './store/firestore/client.js';
import { FirestoreProxyRepository } from './store/firestore/proxies.js';
import { FirestorePoolRepository } from './store/firestore/pools.js';
import { FirestoreDemandRepository } from './store/firestore/demand.js';
import { FirestoreProviderStatusRepository } from './store/firestore/providers.js';
import { FirestoreRelayRepository } from './store/firestore/relays.js';
import { FirestoreStaticClaimRepository } from './store/firestore/static-claims.js';
import { FirestoreReportRepository } from './store/firestore/reports.js';
import type {
  PoolRepository,
  DemandRepository,
  ProviderStatusRepository,
  ProxyRepository,
  RelayRepository,
  ReportRepository,
} from './store/ports.js';

export interface Runtime {
  config: Config;
  logger: Logger;
  bus: Bus;
  proxies: ProxyRepository;
  relays: RelayRepository;
  /** From `EGRESS_RELAY_KEYS`: relay reports and commands are signed and checked, credentials sealed. */
  relayKeys: RelayKeyring | undefined;
  /** `EGRESS_UNSIGNED_RELAYS=development`: without keys, relay messages go unsigned instead of being refused. */
  allowUnsignedRelays: boolean;
  reports: ReportRepository;
  /** Built on first use: only the functions that drive providers pay for (and validate) them. */
  registry: Registry;
  providerStatus: ProviderStatusRepository;
  pools: PoolRepository;
  /** The gateways' demand reports per pool (autoscaled pools). */
  demand: DemandRepository;
  maxEvents: number;
  rolloutCounts: ProxyRepository['rolloutCounts'];
  /** Says once per process that relay messages go unauthenticated, when they do; called where they are handled. */
  warnUnsignedRelayMessages(): void;
}

/** Builds a runtime from an environment (tests build their own with their own env). */
export function createRuntime(
  env: Record<string, string | undefined> = process.env,
  base: Record<string, unknown> = {},
): Runtime {
  const config = loadConfig(env);
  const logger = createLogger({ project: config.project, base });
  const db = createFirestore(config.project);
  const bus = createRestBus({ project: config.project, emulatorHost: env['PUBSUB_EMULATOR_HOST'] });
  const proxies = new FirestoreProxyRepository(db, logger);
  const relays = new FirestoreRelayRepository(db, logger, config.statusRefreshSeconds * 1000);
  const relayKeys = relayKeysFromEnv(env);
  const allowUnsignedRelays = unsignedRelaysAllowed(env);
  let warned = false;
  const warnUnsignedRelayMessages = () => {
    if (relayKeys || warned) return;
    warned = true;
    logger.warn(`relay messages are not authenticated: ${RELAY_KEYS_ENV} is not set`);
  };
  let built: Registry | undefined;
  const providers = (): Registry => {
    if (!built) {
      // Commands to relays are relay messages: a registry with a relay-backed provider sends them,
      // and without keys would send credentials in clear. Fail closed unless development says so:
      // an empty keyring leaves every relay-backed provider not configured, with the reason.
      const relayed = config.providers.some((p) => p.relay !== undefined);
      const refuse = relayed && !relayKeys && !allowUnsignedRelays;
      if (refuse) logger.error(`relay-backed providers are not configured: ${RELAY_KEYS_ENV} ${MISSING_KEYS_REASON}`);
      else if (relayed) warnUnsignedRelayMessages();
      const claims = new FirestoreStaticClaimRepository(db, logger);
      built = createRegistry({ config, relays, bus, logger, relayKeys: refuse ? new Map() : relayKeys, claims });
    }
    return built;
  };
  const registry: Registry = {
    get: (name) => providers().get(name),
    missing: (name) => providers().missing(name),
    all: () => providers().all(),
  };
  return {
    config,
    logger,
    bus,
    proxies,
    relays,
    relayKeys,
    allowUnsignedRelays,
    reports: new FirestoreReportRepository(db, logger),
    registry,
    providerStatus: new FirestoreProviderStatusRepository(db),
    pools: new FirestorePoolRepository(db, logger),
    demand: new FirestoreDemandRepository(db),
    maxEvents: config.maxEvents,
    rolloutCounts: (p) => proxies.rolloutCounts(p),
    warnUnsignedRelayMessages,
  };
}

let memo: Runtime | undefined;

/** The process-wide runtime, created on first use (so importing a function costs nothing). */
export function getRuntime(functionName: string): Runtime {
  memo ??= createRuntime(process.env, { function: functionName });
  return memo;
}
