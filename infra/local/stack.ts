/** The local stack: emulators, topology, every function under functions-framework, echo endpoint, relay, schedules. */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { z } from 'zod';
import { TOPICS } from '../../shared/bus/topics.js';
import { loadConfig } from '../../shared/config/load.js';
import { RELAY_TYPES, type Config } from '../../shared/config/schema.js';
import type { Logger } from '../../shared/logger.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { generateRelayKeys, RELAY_KEYS_ENV } from '../../shared/relay/signature.js';
import { stopAllInstances } from '../../relay/backends/process/index.js';
import { portFree, startChild, supervise, waitForPort, type Supervised } from './children.js';
import { startEmulators, type RunningEmulators } from './emulators.js';
import { applyTopology } from './apply-topology.js';
import { httpFunctions, loadTopology, localPushEndpoint, pushedFunctions, scheduleIntervals } from './topology.js';

const firebaseSchema = z.object({
  emulators: z.object({
    firestore: z.object({ host: z.string(), port: z.number() }),
    pubsub: z.object({ host: z.string(), port: z.number() }),
    functions: z.object({ host: z.string(), port: z.number() }),
  }),
});

export interface StackOptions {
  /** Repository root (holds firebase.json, dist/, infra/). */
  root: string;
  /** Where state, logs and local.env go (default `<root>/.egress`). */
  home: string;
  /** Added to every port from firebase.json and the echo port (run a second stack beside a first). */
  portOffset: number;
  env: NodeJS.ProcessEnv;
  logger: Logger;
}

export interface Stack {
  config: Config;
  /** The API (and dashboard) URL. */
  apiUrl: string;
  env: Record<string, string>;
  pubsub: PubSub;
  /** Restarts every function (picks up an edited EGRESS_CONFIG). */
  restartFunctions(): Promise<void>;
  stop(): Promise<void>;
}

/** The backends' state directories under the relay's (`EGRESS_RELAY_STATE_DIR`: `<dir>/<provider>`). */
function backendDirs(stateDir: string): string[] {
  try {
    return readdirSync(stateDir, { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => join(stateDir, e.name));
  } catch {
    return [];
  }
}

/** Starts everything; on failure stops what it started and rethrows. */
export async function startStack(opts: StackOptions): Promise<Stack> {
  const { root, home, portOffset, logger } = opts;
  const firebase = firebaseSchema.parse(JSON.parse(readFileSync(join(root, 'firebase.json'), 'utf8')));
  const host = firebase.emulators.firestore.host;
  const ports = {
    firestore: firebase.emulators.firestore.port + portOffset,
    pubsub: firebase.emulators.pubsub.port + portOffset,
    functions: firebase.emulators.functions.port + portOffset,
  };
  const logDir = join(home, 'logs');
  const stateDir = join(home, 'relay-state');
  mkdirSync(logDir, { recursive: true });
  const base = loadConfig(opts.env);
  const echoPort = Number(new URL(base.echoUrl).port || 80) + portOffset;
  const echoUrl = `http://${host}:${echoPort}/`;
  for (const [what, port] of [
    ['Firestore emulator', ports.firestore],
    ['Pub/Sub emulator', ports.pubsub],
    ['echo endpoint', echoPort],
  ] as const) {
    if (!(await portFree(host, port)))
      throw new Error(
        `port ${port} (${what}) is in use: is another local stack running? Stop it, or set EGRESS_PORT_OFFSET`,
      );
  }

  const stoppers: (() => Promise<void>)[] = [];
  const stop = async () => {
    for (const s of stoppers.reverse())
      await s().catch((err: unknown) => logger.warn('stop step failed', { error: err }));
    stoppers.length = 0;
  };
  try {
    logger.info('starting the Firestore and Pub/Sub emulators');
    const emulators: RunningEmulators = await startEmulators({
      host,
      firestorePort: ports.firestore,
      pubsubPort: ports.pubsub,
      logDir,
    });
    stoppers.push(() => emulators.stop());
    const env: Record<string, string> = {
      ...Object.fromEntries(Object.entries(opts.env).filter((e): e is [string, string] => e[1] !== undefined)),
      GOOGLE_CLOUD_PROJECT: base.project,
      EGRESS_PROJECT: base.project,
      FIRESTORE_EMULATOR_HOST: emulators.firestoreHost,
      PUBSUB_EMULATOR_HOST: emulators.pubsubHost,
      METADATA_SERVER_DETECTION: 'none',
      EGRESS_ECHO_URL: echoUrl,
      EGRESS_RELAY_STATE_DIR: stateDir,
      // Every function and the relay append spans and metrics to these files (docs/observability.md).
      EGRESS_TELEMETRY: opts.env['EGRESS_TELEMETRY'] ?? 'file',
      EGRESS_TRACE_FILE: opts.env['EGRESS_TRACE_FILE'] ?? join(home, 'telemetry', 'spans.jsonl'),
      EGRESS_METRICS_FILE: opts.env['EGRESS_METRICS_FILE'] ?? join(home, 'telemetry', 'metrics.jsonl'),
      // A fresh API token per run unless the user brought one.
      EGRESS_API_TOKENS: opts.env['EGRESS_API_TOKENS'] ?? randomBytes(24).toString('base64url'),
      // Fresh relay keys per run too: the functions and the relay sign and check every message.
      [RELAY_KEYS_ENV]: opts.env[RELAY_KEYS_ENV] ?? generateRelayKeys(relayNames(base)),
    };
    const config = loadConfig(env);
    // The launcher's own clients (topology, schedules, samples) talk to the emulators it started.
    for (const key of [
      'GOOGLE_CLOUD_PROJECT',
      'FIRESTORE_EMULATOR_HOST',
      'PUBSUB_EMULATOR_HOST',
      'METADATA_SERVER_DETECTION',
    ] as const) {
      process.env[key] = env[key];
    }

    const echo: EchoServer = await startEchoServer({ host, port: echoPort });
    stoppers.push(() => echo.close());

    const topology = loadTopology();
    const httpNames = httpFunctions(topology);
    const functionNames = [...pushedFunctions(topology), ...httpNames];
    // The framework's CLI (its `bin`) sits beside its main module.
    const ffMain = join(
      dirname(createRequire(import.meta.url).resolve('@google-cloud/functions-framework')),
      'main.js',
    );
    const functionPort = new Map(functionNames.map((name, i) => [name, ports.functions + i]));
    const pidDir = join(home, 'pids');
    mkdirSync(pidDir, { recursive: true });
    let functions: Supervised[] = [];
    // Each function is restarted when its process dies, as Cloud Run starts a new instance.
    const startFunctions = async () => {
      functions = functionNames.map((name) =>
        supervise(
          () =>
            startChild(
              `function ${name}`,
              [
                ffMain,
                `--target=${name}`,
                `--source=${join(root, 'dist', 'functions', name)}`,
                `--port=${functionPort.get(name)}`,
                `--signature-type=${httpNames.includes(name) ? 'http' : 'cloudevent'}`,
              ],
              env,
              join(logDir, `function-${name}.log`),
            ),
          join(pidDir, `function-${name}.pid`),
          (code, signal) => logger.warn(`the function ${name} exited; starting a new instance`, { code, signal }),
        ),
      );
      await Promise.all(functions.map((f, i) => waitForPort(host, ports.functions + i, 30_000, f.current())));
    };
    const stopFunctions = async () => {
      await Promise.all(functions.map((f) => f.stop()));
    };
    logger.info('starting the functions', { functions: functionNames });
    await startFunctions();
    stoppers.push(stopFunctions);

    const pubsub = new PubSub({ projectId: config.project });
    stoppers.push(() => pubsub.close());
    await applyTopology(pubsub, topology, {
      pushEndpoint: (fn, topic) => localPushEndpoint(`http://${host}:${functionPort.get(fn)}`, config.project, topic),
      relays: relayNames(config),
    });

    logger.info('starting the relay');
    // Supervised like a systemd unit with Restart=always: a relay that dies is started again and
    // re-adopts the proxy processes it left running.
    const relay = supervise(
      () => startChild('relay', [join(root, 'dist', 'relay', 'main.js')], env, join(logDir, 'relay.log')),
      join(home, 'relay.pid'),
      (code, signal) => logger.warn('the relay exited; restarting it', { code, signal }),
    );
    stoppers.push(async () => {
      await relay.stop();
      // Each backend keeps its state in its own directory under it (`<stateDir>/<provider>`).
      let stopped = 0;
      for (const dir of backendDirs(stateDir)) stopped += await stopAllInstances(dir);
      rmSync(stateDir, { recursive: true, force: true });
      logger.info('stopped the relay and its proxy processes', { proxies: stopped });
    });

    const ticks = scheduleIntervals(topology, config);
    const publishTick = (tick: (typeof ticks)[number]) => {
      pubsub
        .topic(tick.topic)
        .publishMessage({ json: tick.data })
        .catch((err: unknown) => logger.warn('scheduled publish failed', { schedule: tick.name, error: err }));
    };
    const timers = ticks.map((tick) => setInterval(() => publishTick(tick), tick.intervalSeconds * 1000));
    // The provider-health monitor checks every provider as soon as the stack starts, then every interval.
    for (const tick of ticks) if (tick.topic === TOPICS.healthTicks) publishTick(tick);
    stoppers.push(() => {
      timers.forEach(clearInterval);
      return Promise.resolve();
    });

    const apiUrl = `http://${host}:${functionPort.get('api')}`;
    const localEnv = {
      GOOGLE_CLOUD_PROJECT: config.project,
      FIRESTORE_EMULATOR_HOST: emulators.firestoreHost,
      PUBSUB_EMULATOR_HOST: emulators.pubsubHost,
      EGRESS_API_URL: apiUrl,
      EGRESS_TOKEN: config.apiTokens[0] ?? '',
    };
    writeFileSync(
      join(home, 'local.env'),
      Object.entries(localEnv)
        .map(([k, v]) => `${k}=${v}\n`)
        .join(''),
    );
    return {
      config,
      env,
      pubsub,
      apiUrl,
      async restartFunctions() {
        await stopFunctions();
        await startFunctions();
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The stack's home directory from the environment (`EGRESS_HOME`, default `<root>/.egress`). */
export function stackHome(root: string, env: NodeJS.ProcessEnv): string {
  return resolve(env['EGRESS_HOME'] ?? join(root, '.egress'));
}

/** The relays the configured providers name (`local`, the embedded relay, when none does). */
function relayNames(config: Config): string[] {
  const named = config.providers.flatMap((p) => (RELAY_TYPES.includes(p.type) && p.relay ? [p.relay] : []));
  return named.length > 0 ? [...new Set(named)] : ['local'];
}
