/**
 * The `kubernetes` provider as the functions build it (config → registry), against the wire-level
 * fake Kubernetes API, with the Firestore and Pub/Sub emulators for reconcile and GC tests.
 */
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { type Bus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import type { Config } from '../../shared/config/schema.js';
import { type Logger } from '../../shared/logger.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import type { Provider } from '../../shared/providers/contract.js';
import type { Registry } from '../../shared/providers/contract.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { startFakeKube, type FakeKube, type FakeKubeOptions } from '../fakes/kube/index.js';
import { startCheckWorld } from './check-world.js';

export interface KubeHarness {
  fake: FakeKube;
  config: Config;
  registry: Registry;
  /** The provider named `k8s`. */
  provider: Provider;
  proxies: FirestoreProxyRepository;
  /** `providers/{name}`, written by the provider-health monitor. */
  providerStatus: FirestoreProviderStatusRepository;
  bus: Bus;
  logger: Logger;
  echo: EchoServer;
  /** What `runCheck` needs. */
  deps: CheckDeps;
  close(): Promise<void>;
}

/**
 * @param name - test name: the project id prefix and the log file
 * @param overrides - config fields; `providers` replaces the default single provider `k8s`
 * @param options - the provider's options beyond cluster access (namespace, …)
 */
export async function startKubeHarness(
  name: string,
  overrides: Record<string, unknown> = {},
  options: Record<string, unknown> = {},
  fakeOptions: FakeKubeOptions = {},
): Promise<KubeHarness> {
  const fake = await startFakeKube(fakeOptions);
  const echo = await startEchoServer();
  const config = parseConfig({
    installationId: 'it',
    echoUrl: echo.url,
    backoffBaseSeconds: 1,
    backoffMaxSeconds: 4,
    probeTimeoutSeconds: 2,
    // The echo endpoint is on loopback, on a port of its own: the Pods' tinyproxy (its ConnectPort
    // lines) admits it only with a policy that allows it.
    providers: [
      { name: 'k8s', type: 'kubernetes', egress: localEgressPolicy([]), options: { ...fake.access(), ...options } },
    ],
    ...overrides,
  });
  const world = await startCheckWorld(name, config);
  const { registry, proxies, providerStatus, bus, logger } = world;
  const provider = registry.get('k8s') ?? registry.all()[0];
  if (!provider) throw new Error('the registry built no kubernetes provider');
  return {
    fake,
    config,
    registry,
    provider,
    proxies,
    providerStatus,
    bus,
    logger,
    echo,
    deps: { config, proxies, registry, logger, bus, providerStatus, rolloutCounts: (p) => proxies.rolloutCounts(p) },
    async close() {
      await fake.close();
      await echo.close();
      await world.close();
    },
  };
}
