/**
 * The `gcp` provider as the functions build it (config → registry), against the wire-level fake
 * Compute API, with the Firestore and Pub/Sub emulators for reconcile and GC tests.
 */
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { type Bus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import type { Config } from '../../shared/config/schema.js';
import { type Logger } from '../../shared/logger.js';
import type { EchoServer } from '../../shared/probe/echo-server.js';
import type { Provider } from '../../shared/providers/contract.js';
import type { Registry } from '../../shared/providers/contract.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import type { FakeGce } from '../fakes/gce/index.js';
import { startCheckWorld } from './check-world.js';

export interface GceHarness {
  config: Config;
  registry: Registry;
  /** The provider named `gce`. */
  provider: Provider;
  proxies: FirestoreProxyRepository;
  bus: Bus;
  logger: Logger;
  /** What `runCheck` needs. */
  deps: CheckDeps;
  close(): Promise<void>;
}

/**
 * One installation's functions side: its own emulator project (its own proxy documents), a `gcp`
 * provider named `gce` on `fake`'s project `shared-project`.
 *
 * @param name - test name: the project id prefix and the log file
 * @param overrides - config fields (installationId, intervals, backoff)
 * @param options - provider options beyond the endpoint
 */
export async function startGceHarness(
  name: string,
  fake: FakeGce,
  echo: EchoServer,
  overrides: Record<string, unknown> = {},
  options: Record<string, unknown> = {},
): Promise<GceHarness> {
  const config = parseConfig({
    installationId: 'it',
    echoUrl: echo.url,
    backoffBaseSeconds: 2,
    backoffMaxSeconds: 8,
    probeTimeoutSeconds: 2,
    providers: [
      {
        name: 'gce',
        type: 'gcp',
        // The echo endpoint is on loopback, on a port of its own: the guests' tinyproxy (its
        // ConnectPort lines) admits it only with a policy that allows it.
        egress: localEgressPolicy([]),
        options: {
          project: 'shared-project',
          zone: 'us-central1-a',
          operationWaitSeconds: 5,
          ...fake.endpoint,
          ...options,
        },
      },
    ],
    ...overrides,
  });
  const world = await startCheckWorld(name, config);
  const { registry, proxies, bus, logger } = world;
  const provider = registry.get('gce');
  if (!provider) throw new Error('the registry built no gcp provider');
  return {
    config,
    registry,
    provider,
    proxies,
    bus,
    logger,
    deps: { config, proxies, registry, logger, bus, rolloutCounts: (p) => proxies.rolloutCounts(p) },
    close: () => world.close(),
  };
}
