/**
 * A real relay for integration tests: the relay agent with a `process` backend running real proxy
 * processes (or the backends the caller configures), commands and reports over the Pub/Sub emulator, reports applied to the Firestore
 * emulator by the `relay-report` handler (fed from a pull subscription instead of a push).
 */
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { appendFileSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PubSub, type Message } from '@google-cloud/pubsub';
import { createPubSubBus, type Bus } from '../../shared/bus/pubsub.js';
import { decodeBody, type BusMessage } from '../../shared/bus/message.js';
import { parseConfig } from '../../shared/config/load.js';
import type { Config } from '../../shared/config/schema.js';
import type { Firestore } from '@google-cloud/firestore';
import { createLogger, type Logger } from '../../shared/logger.js';
import type { Registry } from '../../shared/providers/contract.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { generateRelayKeys, parseRelayKeys, type RelayKeyring } from '../../shared/wire/signature.js';
import { handleRelayReport } from '../../shared/relay-report.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { createRelayAgent, type RelayAgent, type RelayAgentDeps } from '../../relay/agent.js';
import type { RelayBackend } from '../../relay/backends/backend.js';
import { createBackends } from '../../relay/backends/create-backends.js';
import { stopAllInstances } from '../../relay/backends/process/index.js';
import { PORTS_PER_INSTANCE } from '../../relay/backends/process/ports.js';
import { parseRelayConfig } from '../../relay/config.js';
import { createStreamingSubscription } from '../../relay/streaming-subscription.js';
import { emulatorEnv } from './emulator-env.js';

export interface RelayHarness {
  config: Config;
  /** The Firestore client of this harness's emulator project. */
  db: Firestore;
  registry: Registry;
  proxies: FirestoreProxyRepository;
  relays: FirestoreRelayRepository;
  providerStatus: FirestoreProviderStatusRepository;
  bus: Bus;
  logger: Logger;
  agent: RelayAgent;
  /** The keys both sides sign and check with (forged messages are made without them). */
  relayKeys: RelayKeyring;
  stateDir: string;
  echo: EchoServer;
  close(): Promise<void>;
}

/** Hooks for fault injection (the guarantee suites); every one is optional. */
export interface RelayHarnessOptions {
  /** Receives every log line of the functions' side and of the relay, besides the log file. */
  onLog?: (line: string) => void;
  /**
   * Delivers one relay report to the `relay-report` handler; the default applies it once, at once.
   * Duplicating, delaying and reordering reports happens here.
   */
  deliverReport?: (message: BusMessage, apply: (message: BusMessage) => Promise<string>) => Promise<void>;
  /** Wraps each relay backend (faults on the relay's side). */
  wrapBackend?: (backend: RelayBackend) => RelayBackend;
  /**
   * The relay's backends (relay config entries) instead of the `process` provider `proc`; the
   * functions' `providers` then come from `overrides`.
   */
  backends?: (stateDir: string) => unknown[];
  /** The relay's probe (default: through the proxy, anywhere). */
  probe?: RelayAgentDeps['probe'];
  /** Where the echo endpoint listens (default loopback); guests in a test namespace need the veth address. */
  echoHost?: string;
}

/**
 * The `portRange` of a process backend that holds `proxies` instances at once from port `first`
 * (each takes its proxy's port and its TLS listener's).
 */
export function proxyPorts(first: number, proxies: number): [number, number] {
  return [first, first + proxies * PORTS_PER_INSTANCE - 1];
}

/**
 * @param name - test name: the relay id, the log file, and the project id prefix
 * @param portRange - the default `proc` backend's ports, from {@link proxyPorts} (keep ranges of parallel
 *   files apart; unused when `options.backends` is given)
 * @param overrides - config fields (intervals, grace periods) for the functions' side
 */
export async function startRelayHarness(
  name: string,
  portRange: [number, number],
  overrides: Record<string, unknown> = {},
  options: RelayHarnessOptions = {},
): Promise<RelayHarness> {
  const emu = emulatorEnv(name);
  const echo = await startEchoServer(options.echoHost ? { host: options.echoHost } : {});
  const stateDir = mkdtempSync(join(tmpdir(), `egress-${name}-`));
  mkdirSync('test-results', { recursive: true });
  const logger = createLogger({
    write: (l) => {
      appendFileSync(`test-results/${name}.log`, `${l}\n`);
      options.onLog?.(l);
    },
    level: 'DEBUG',
  });
  const pubsub = new PubSub({ projectId: emu.projectId });
  for (const topic of ['relay-commands', 'relay-reports', 'proxy-checks']) await pubsub.createTopic(topic);
  const [commands] = await pubsub.createSubscription('relay-commands', `relay-commands-${name}`, {
    filter: `attributes.relay = "${name}"`,
  });
  const [reports] = await pubsub.createSubscription('relay-reports', 'reports-pump');

  const relayConfig = parseRelayConfig({
    relay: name,
    project: emu.projectId,
    subscription: `relay-commands-${name}`,
    reportsTopic: 'relay-reports',
    echoUrl: echo.url,
    probeIntervalSeconds: 1,
    reportIntervalSeconds: 1,
    probeTimeoutSeconds: 2,
    installationId: 'it',
    // Loopback stands in for the Internet of these tests: a backend's proxies may reach every
    // loopback port (the echo's among them) unless the test gives its own policy (the fence tests
    // and the real guests' do).
    backends: (
      options.backends?.(stateDir) ?? [
        { provider: 'proc', type: 'process', stateDir, bindAddresses: ['127.0.0.1'], portRange },
      ]
    ).map((b) => (isEntry(b) ? { egress: localEgressPolicy([]), ...b } : b)),
  });
  const backends = new Map(
    [...createBackends(relayConfig, { logger })].map(([k, b]) => [k, options.wrapBackend?.(b) ?? b]),
  );
  const config = parseConfig({
    installationId: 'it',
    echoUrl: echo.url,
    providers: [{ name: 'proc', type: 'process', relay: name, options: { heartbeatTimeoutSeconds: 30 } }],
    ...overrides,
  });
  // Signed both ways, as the local stack and a deployment run: a fresh key for each relay.
  const relayNames = new Set([name, ...config.providers.flatMap((p) => (p.relay ? [p.relay] : []))]);
  const relayKeys = parseRelayKeys(generateRelayKeys([...relayNames]));
  const bus = createPubSubBus(pubsub);
  const agent = createRelayAgent({
    config: relayConfig,
    bus,
    subscribe: (subscription, maxInFlight) => createStreamingSubscription(pubsub, subscription, maxInFlight),
    backends,
    logger,
    keys: relayKeys.get(name),
    ...(options.probe && { probe: options.probe }),
  });
  await agent.start();

  const db = createFirestore(emu.projectId);
  const relays = new FirestoreRelayRepository(db, logger);
  const proxies = new FirestoreProxyRepository(db, logger);
  const apply = (message: BusMessage) => handleRelayReport({ config, relays, relayKeys, bus, logger }, message);
  const deliver = options.deliverReport ?? (async (message: BusMessage) => void (await apply(message)));
  reports.on('message', (m: Message) => {
    deliver(decodeBody(m.id, m.publishTime.getTime(), m.attributes, m.data.toString('utf8')), apply)
      .then(() => m.ack())
      .catch((err: unknown) => {
        logger.error('report pump failed', { error: err });
        m.nack();
      });
  });
  const registry = createRegistry({ config, relays, bus, logger, relayKeys });
  return {
    config,
    relayKeys,
    db,
    registry,
    proxies,
    relays,
    providerStatus: new FirestoreProviderStatusRepository(db),
    bus,
    logger,
    agent,
    stateDir,
    echo,
    async close() {
      await agent.stop();
      await Promise.all([...backends.values()].map((b) => b.close()));
      await reports.close();
      await commands.close();
      await stopAllInstances(stateDir);
      await pubsub.close();
      await echo.close();
      rmSync(stateDir, { recursive: true, force: true });
    },
  };
}

function isEntry(entry: unknown): entry is Record<string, unknown> {
  return typeof entry === 'object' && entry !== null;
}
