/**
 * What every provider harness builds around its config, as the check function would: a logger
 * writing `test-results/<name>.log`, Firestore and Pub/Sub on the emulators in a project of the
 * test's own (with the `proxy-checks` topic), the registry, and the proxy and provider stores.
 */
import { appendFileSync, mkdirSync } from 'node:fs';
import type { Firestore } from '@google-cloud/firestore';
import { PubSub } from '@google-cloud/pubsub';
import { createPubSubBus, type Bus } from '../../shared/bus/pubsub.js';
import type { Config } from '../../shared/config/schema.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import type { Registry } from '../../shared/providers/contract.js';
import type { RegistryDeps } from '../../shared/providers/factory.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { emulatorEnv } from './emulator-env.js';

export interface CheckWorld {
  logger: Logger;
  db: Firestore;
  bus: Bus;
  registry: Registry;
  proxies: FirestoreProxyRepository;
  /** `providers/{name}`, written by the provider-health monitor. */
  providerStatus: FirestoreProviderStatusRepository;
  /** Closes the Pub/Sub and Firestore clients. */
  close(): Promise<void>;
}

/** The DEBUG logger of test `name`, appending to `test-results/<name>.log`. */
export function testLogger(name: string): Logger {
  mkdirSync('test-results', { recursive: true });
  return createLogger({ write: (l) => appendFileSync(`test-results/${name}.log`, `${l}\n`), level: 'DEBUG' });
}

/**
 * @param name - test name: the project id prefix and the log file
 * @param extra - registry dependencies beyond config, relays, bus and logger (a static provider's claims)
 */
export async function startCheckWorld(
  name: string,
  config: Config,
  extra: (db: Firestore, logger: Logger) => Partial<RegistryDeps> = () => ({}),
): Promise<CheckWorld> {
  const emu = emulatorEnv(name);
  const logger = testLogger(name);
  const db = createFirestore(emu.projectId);
  const pubsub = new PubSub({ projectId: emu.projectId });
  await pubsub.createTopic('proxy-checks');
  const bus = createPubSubBus(pubsub);
  const registry = createRegistry({
    config,
    relays: new FirestoreRelayRepository(db, logger),
    bus,
    logger,
    ...extra(db, logger),
  });
  return {
    logger,
    db,
    bus,
    registry,
    proxies: new FirestoreProxyRepository(db, logger),
    providerStatus: new FirestoreProviderStatusRepository(db),
    async close() {
      await pubsub.close();
      await db.terminate();
    },
  };
}
