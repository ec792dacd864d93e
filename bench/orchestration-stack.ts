/**
 * The local stack for the orchestration bench, on the bench's emulators: the built functions under
 * functions-framework (pushed to by the Pub/Sub emulator), a real relay with the `process` backend
 * running real proxy processes, the echo endpoint, and the floor function beside them.
 */
import { localEgressPolicy } from '../shared/config/egress-policy.js';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { setTimeout as sleep } from 'node:timers/promises';
import { LOCAL_DEFAULT_CONFIG } from '../shared/config/local-default.js';
import { createPubSubBus } from '../shared/bus/pubsub.js';
import { createFirestore } from '../shared/store/firestore/client.js';
import { startEchoServer, type EchoServer } from '../shared/probe/echo-server.js';
import { createRelayAgent, type RelayAgent } from '../relay/agent.js';
import type { RelayBackend } from '../relay/backends/backend.js';
import { createBackends } from '../relay/backends/create-backends.js';
import { stopAllInstances } from '../relay/backends/process/index.js';
import { LOCAL_RELAY_CONFIG, parseRelayConfig } from '../relay/config.js';
import { createStreamingSubscription } from '../relay/streaming-subscription.js';
import { startChild, waitForPort, type Child } from '../infra/local/children.js';
import { freePort } from '../infra/local/emulators.js';
import { applyTopology } from '../infra/local/apply-topology.js';
import { loadTopology, localPushEndpoint } from '../infra/local/topology.js';
import type { Artifacts } from './artifacts.js';
import { startStatusTally, type StatusTally } from './status-tally.js';
import { benchLogger } from './check-env.js';
import type { Cleanup } from './cleanup.js';
import { generateRelayKeys, parseRelayKeys, RELAY_KEYS_ENV } from '../shared/wire/signature.js';

export const FLOOR_TOPIC = 'bench-floor';
const PROVIDER = LOCAL_DEFAULT_CONFIG.providers[0]?.name ?? 'local';
/**
 * The functions the create → Ready path goes through, and the provider-health monitor whose verdict
 * the check function reads (as `npm start` runs it: ticks every `healthIntervalSeconds`). Sweeps and
 * GC are left out: they are not on that path.
 */
const FUNCTIONS = ['requests', 'check', 'relay-report', 'health'] as const;

export interface OrchestrationStack {
  project: string;
  pubsub: PubSub;
  /** Instance name → when the relay's backend create returned (the proxy process listens). */
  reachableAt: Map<string, number>;
  /** Function → HTTP status → pushes it answered with that status (bench/status-tally.ts). */
  responses(): Record<string, Record<string, number>>;
  stop(): Promise<void>;
}

/** Wraps a backend so the moment each create returns (the instance is reachable) is recorded. */
function recordReachable(backend: RelayBackend, reachableAt: Map<string, number>): RelayBackend {
  return {
    name: backend.name,
    type: backend.type,
    probesRemotely: backend.probesRemotely,
    resolvePlacement: (p) => backend.resolvePlacement(p),
    async create(spec) {
      const instance = await backend.create(spec);
      if (instance.state === 'Running' && !reachableAt.has(spec.name)) reachableAt.set(spec.name, Date.now());
      return instance;
    },
    get: (name) => backend.get(name),
    delete: (name) => backend.delete(name),
    list: () => backend.list(),
    check: () => backend.check(),
    credentials: (name) => backend.credentials(name),
    close: () => backend.close(),
  };
}

/** Ticks the monitor until its verdict on the relay's provider is Healthy (60 s at most). */
async function providerHealthy(project: string, tick: () => void): Promise<void> {
  const db = createFirestore(project);
  try {
    for (const deadline = Date.now() + 60_000; Date.now() < deadline;) {
      tick();
      await sleep(1000);
      const status: unknown = (await db.doc(`providers/${PROVIDER}`).get()).get('status');
      if (status === 'Healthy') return;
    }
    throw new Error(`the monitor never saw provider ${PROVIDER} healthy`);
  } finally {
    await db.terminate();
  }
}

/** A port range for proxies away from the tests' and the local stack's (taken ports are skipped). */
function proxyPorts(size: number): [number, number] {
  const base = 25000 + (process.pid % 40) * 100;
  return [base, base + size - 1];
}

/**
 * Starts the functions, their push wiring, a relay and the health ticks for the orchestration trials.
 * One start-up sequence in which every step pushes its own stopper before the next starts, so an
 * interrupted start-up stops exactly what it started.
 */
export async function startOrchestrationStack(
  artifacts: Artifacts,
  emulators: { firestoreHost: string; pubsubHost: string },
  project: string,
  logDir: string,
  cleanup: Cleanup,
): Promise<OrchestrationStack> {
  const stoppers: (() => Promise<void>)[] = [];
  // Registered before anything starts, so an interrupted start-up still stops what it started.
  const stop = cleanup.add(async () => {
    for (let s = stoppers.pop(); s; s = stoppers.pop()) await s().catch(() => undefined);
  });
  try {
    const echo: EchoServer = await startEchoServer();
    stoppers.push(() => echo.close());
    const relayKeysText = generateRelayKeys([LOCAL_RELAY_CONFIG.relay]);
    const env: NodeJS.ProcessEnv = {
      PATH: process.env['PATH'],
      HOME: process.env['HOME'],
      GOOGLE_CLOUD_PROJECT: project,
      EGRESS_PROJECT: project,
      FIRESTORE_EMULATOR_HOST: emulators.firestoreHost,
      PUBSUB_EMULATOR_HOST: emulators.pubsubHost,
      METADATA_SERVER_DETECTION: 'none',
      EGRESS_ECHO_URL: echo.url,
      // Signed relay messages, as the local stack and a deployment run them.
      [RELAY_KEYS_ENV]: relayKeysText,
    };
    const ffMain = join(
      dirname(createRequire(import.meta.url).resolve('@google-cloud/functions-framework')),
      'main.js',
    );
    const ports = new Map<string, number>();
    const children: Child[] = [];
    for (const name of [...FUNCTIONS, 'bench-floor']) {
      const source = artifacts.sources.get(name);
      if (!source) throw new Error(`no built function ${name}`);
      const port = await freePort();
      ports.set(name, port);
      const target = name === 'bench-floor' ? 'floor' : name;
      const args = [
        ffMain,
        `--target=${target}`,
        `--source=${source}`,
        `--port=${port}`,
        '--signature-type=cloudevent',
      ];
      children.push(startChild(`function ${name}`, args, env, join(logDir, `function-${name}.log`)));
    }
    stoppers.push(async () => {
      await Promise.all(children.map((c) => c.stop()));
    });
    await Promise.all(children.map((c, i) => waitForPort('127.0.0.1', [...ports.values()][i] ?? 0, 60_000, c)));

    // The client finds the emulator through PUBSUB_EMULATOR_HOST (set by the bench).
    const pubsub = new PubSub({ projectId: project });
    stoppers.push(() => pubsub.close());
    const url = (fn: string) => `http://127.0.0.1:${ports.get(fn) ?? 9}`;
    // Every push goes through a forwarder that tallies the status each function answered.
    const tallies = new Map<string, StatusTally>();
    for (const fn of FUNCTIONS) tallies.set(fn, await startStatusTally(url(fn)));
    stoppers.push(async () => {
      for (const t of tallies.values()) await t.close();
    });
    const responses = () => Object.fromEntries([...tallies].map(([fn, t]) => [fn, t.counts()]));
    await applyTopology(pubsub, loadTopology(), {
      pushEndpoint: (fn, topic) => localPushEndpoint(tallies.get(fn)?.url ?? url(fn), project, topic),
      relays: [LOCAL_DEFAULT_CONFIG.providers[0]?.relay ?? 'local'],
      omitPushRetryPolicy: true,
    });
    await pubsub.createTopic(FLOOR_TOPIC);
    await pubsub.createSubscription(FLOOR_TOPIC, `${FLOOR_TOPIC}-push`, {
      pushConfig: { pushEndpoint: localPushEndpoint(url('bench-floor'), project, FLOOR_TOPIC) },
    });

    const stateDir = mkdtempSync(join(tmpdir(), 'egress-bench-relay-'));
    const relayConfig = parseRelayConfig({
      ...LOCAL_RELAY_CONFIG,
      project,
      echoUrl: echo.url,
      backends: [
        {
          provider: 'local',
          type: 'process',
          stateDir,
          bindAddresses: ['127.0.0.1'],
          portRange: proxyPorts(100),
          // Loopback stands in for the Internet: the echo endpoint (a free port) must be allowed.
          egress: localEgressPolicy([]),
        },
      ],
    });
    const logger = benchLogger(join(logDir, 'relay.log'));
    const reachableAt = new Map<string, number>();
    const backends = new Map(
      [...createBackends(relayConfig, { logger })].map(([k, b]) => [k, recordReachable(b, reachableAt)]),
    );
    const keys = parseRelayKeys(relayKeysText).get(relayConfig.relay);
    const agent: RelayAgent = createRelayAgent({
      config: relayConfig,
      bus: createPubSubBus(pubsub),
      subscribe: (name, maxInFlight) => createStreamingSubscription(pubsub, name, maxInFlight),
      backends,
      logger,
      keys,
    });
    await agent.start();
    stoppers.push(async () => {
      await agent.stop();
      for (const b of backends.values()) await b.close();
      await stopAllInstances(stateDir);
      rmSync(stateDir, { recursive: true, force: true });
    });
    const tick = () => {
      pubsub
        .topic('health-ticks')
        .publishMessage({ json: {} })
        .catch(() => undefined);
    };
    const timer = setInterval(tick, LOCAL_DEFAULT_CONFIG.healthIntervalSeconds * 1000);
    stoppers.push(() => Promise.resolve(clearInterval(timer)));
    // Without sweeps, a proxy checked while the provider looked down would wait for ever: start
    // measuring once the monitor has seen the relay report.
    await providerHealthy(project, tick);
    return { project, pubsub, reachableAt, responses, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
