/** The local stack: emulators, topology, every function under functions-framework, echo endpoint, relay, schedules. */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PubSub } from '@google-cloud/pubsub';
import { z } from 'zod';
import { TOPICS } from '../../shared/bus/topics.js';
import { loadConfig } from '../../shared/config/load.js';
import { RELAY_TYPES, type Config } from '../../shared/config/schema.js';
import type { Logger } from '../../shared/logger.js';
import { DEFAULT_ECHO_MAP, parseEchoMap } from './echo-map.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { generateRelayKeys, RELAY_KEYS_ENV } from '../../shared/wire/signature.js';
import { stopAllInstances } from '../../relay/backends/process/index.js';
import { NFT_PATH, removeFence } from '../../relay/backends/process/fence.js';
import { TINYPROXY_PATH } from '../../relay/backends/process/tinyproxy.js';
import { LOCAL_RELAY_CONFIG, LOCAL_RUN_AS_ENV, localRunAs, STACK_PORTS_ENV } from '../../relay/config.js';
import { portFree, startChild, supervise } from './children.js';
import { localFunctions } from './stack-functions.js';
import { startEmulators, type RunningEmulators } from './emulators.js';
import { applyTopology } from './apply-topology.js';
import { loadTopology, localPushEndpoint, scheduleIntervals, type ScheduledTick } from './topology.js';
import { leastToken } from '../../shared/api/scopes.js';

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
  const base = loadConfig(opts.env);
  const { host, ports } = await localPorts(root, portOffset, base.echoUrl);
  const logDir = join(home, 'logs');
  const stateDir = join(home, 'relay-state');
  mkdirSync(logDir, { recursive: true });
  const echoUrl = `http://${host}:${ports.echo}/`;

  const stoppers: (() => Promise<void>)[] = [];
  const stop = () => runStoppers(stoppers, logger);
  try {
    logger.info('starting the Firestore and Pub/Sub emulators');
    const emulators = await startEmulators({ host, firestorePort: ports.firestore, pubsubPort: ports.pubsub, logDir });
    stoppers.push(() => emulators.stop());
    const env = functionsEnv(opts.env, home, base, emulators, echoUrl, stateDir);
    const config = loadConfig(env);
    pointAtEmulators(env);

    const sourceMap = parseEchoMap(opts.env.EGRESS_ECHO_MAP ?? DEFAULT_ECHO_MAP);
    const echo: EchoServer = await startEchoServer({ host, port: ports.echo, sourceMap });
    stoppers.push(() => echo.close());

    const topology = loadTopology();
    const functions = localFunctions({ root, home, host, firstPort: ports.functions, topology, env, logger });
    await functions.start();
    stoppers.push(() => functions.stop());

    const pubsub = new PubSub({ projectId: config.project });
    stoppers.push(() => pubsub.close());
    await applyTopology(pubsub, topology, {
      pushEndpoint: (fn, topic) => localPushEndpoint(`http://${host}:${functions.port.get(fn)}`, config.project, topic),
      relays: relayNames(config),
      omitPushRetryPolicy: true,
    });

    // Its proxies stand on the Internet's side: the stack's own ports are fenced off them.
    env[STACK_PORTS_ENV] = stackPorts(ports, portOffset);
    const fenceUid = localFenceUid(opts.env, portOffset);
    if (fenceUid !== undefined) env[LOCAL_RUN_AS_ENV] = String(fenceUid);
    else if (!opts.env['EGRESS_RELAY_CONFIG'])
      logger.warn(
        "the local proxies run without a kernel fence (it needs root and nft): a request through one can reach the stack's own ports (docs/operations.md, Egress fence)",
      );
    stoppers.push(startRelay(root, home, stateDir, env, logger, fenceUid));

    stoppers.push(startSchedules(pubsub, scheduleIntervals(topology, config), logger));

    const apiUrl = `http://${host}:${functions.port.get('api')}`;
    writeLocalEnv(home, localEnv(config, emulators, apiUrl));
    return {
      config,
      env,
      pubsub,
      apiUrl,
      async restartFunctions() {
        await functions.restart();
      },
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/**
 * Runs the stop steps, the last started first, and empties the list (a second stop does nothing).
 * A step that fails is logged and the others still run.
 */
async function runStoppers(stoppers: (() => Promise<void>)[], logger: Logger): Promise<void> {
  for (const s of stoppers.reverse())
    await s().catch((err: unknown) => logger.warn('stop step failed', { error: err }));
  stoppers.length = 0;
}

/** Points the launcher's own clients (topology, schedules, samples) at the emulators it started. */
function pointAtEmulators(env: Record<string, string>): void {
  for (const key of [
    'GOOGLE_CLOUD_PROJECT',
    'FIRESTORE_EMULATOR_HOST',
    'PUBSUB_EMULATOR_HOST',
    'METADATA_SERVER_DETECTION',
  ] as const) {
    process.env[key] = env[key];
  }
}

/**
 * The stack's host and ports: firebase.json's, plus `portOffset`, and the echo endpoint on the
 * config's `echoUrl` port plus the offset.
 *
 * @throws Error when the Firestore, Pub/Sub or echo port is taken (another stack is running)
 */
async function localPorts(root: string, portOffset: number, echoUrl: string) {
  const firebase = firebaseSchema.parse(JSON.parse(readFileSync(join(root, 'firebase.json'), 'utf8')));
  const host = firebase.emulators.firestore.host;
  const ports = {
    firestore: firebase.emulators.firestore.port + portOffset,
    pubsub: firebase.emulators.pubsub.port + portOffset,
    functions: firebase.emulators.functions.port + portOffset,
    echo: Number(new URL(echoUrl).port || 80) + portOffset,
  };
  for (const [what, port] of [
    ['Firestore emulator', ports.firestore],
    ['Pub/Sub emulator', ports.pubsub],
    ['echo endpoint', ports.echo],
  ] as const) {
    if (!(await portFree(host, port)))
      throw new Error(
        `port ${port} (${what}) is in use: is another local stack running? Stop it, or set EGRESS_PORT_OFFSET`,
      );
  }
  return { host, ports };
}

/**
 * The ports this stack owns (the 100 from the Firestore emulator's: emulators, fronts, function
 * instances) but the echo endpoint's, and the gateway's, as `EGRESS_STACK_PORTS` lists them.
 */
function stackPorts(ports: { firestore: number; echo: number }, portOffset: number): string {
  const owned = Array.from({ length: 100 }, (_, i) => ports.firestore + i).filter((p) => p !== ports.echo);
  return [...owned, GATEWAY_PORT + portOffset].join(',');
}

/**
 * The first uid the embedded relay's proxies run as when this stack can fence them by the kernel
 * (root, `nft` and tinyproxy present, no relay config file of the user's): a range of its own per
 * port offset, so that two stacks on one machine each fence only their own proxies. Undefined
 * otherwise: the proxies run as the relay's user, and nothing keeps them off the stack's ports (the
 * policy's port list is too wide for `ConnectPort` lines).
 */
function localFenceUid(env: NodeJS.ProcessEnv, portOffset: number): number | undefined {
  const can = process.getuid?.() === 0 && existsSync(NFT_PATH) && existsSync(TINYPROXY_PATH);
  return can && !env['EGRESS_RELAY_CONFIG'] ? 100_000 + portOffset * LOCAL_RELAY_CONFIG.backends.length : undefined;
}

/** The local gateway's port before the offset (start.ts). */
export const GATEWAY_PORT = 8899;

/** The environment of the functions and the relay: the caller's, pointed at this stack. */
function functionsEnv(
  callerEnv: NodeJS.ProcessEnv,
  home: string,
  base: Config,
  emulators: RunningEmulators,
  echoUrl: string,
  stateDir: string,
): Record<string, string> {
  return {
    ...Object.fromEntries(Object.entries(callerEnv).filter((e): e is [string, string] => e[1] !== undefined)),
    GOOGLE_CLOUD_PROJECT: base.project,
    EGRESS_PROJECT: base.project,
    FIRESTORE_EMULATOR_HOST: emulators.firestoreHost,
    PUBSUB_EMULATOR_HOST: emulators.pubsubHost,
    METADATA_SERVER_DETECTION: 'none',
    EGRESS_ECHO_URL: echoUrl,
    EGRESS_RELAY_STATE_DIR: stateDir,
    // Every function and the relay append spans and metrics to these files (docs/observability.md).
    EGRESS_TELEMETRY: callerEnv['EGRESS_TELEMETRY'] ?? 'file',
    EGRESS_TRACE_FILE: callerEnv['EGRESS_TRACE_FILE'] ?? join(home, 'telemetry', 'spans.jsonl'),
    EGRESS_METRICS_FILE: callerEnv['EGRESS_METRICS_FILE'] ?? join(home, 'telemetry', 'metrics.jsonl'),
    // Fresh API tokens per run unless the user brought some: an admin one for people and the CLI,
    // a discover one for the gateway (shared/api/scopes.ts).
    EGRESS_API_TOKENS:
      callerEnv['EGRESS_API_TOKENS'] ??
      `admin:${randomBytes(24).toString('base64url')},discover:${randomBytes(24).toString('base64url')}`,
    // Fresh relay keys per run too: the functions and the relay sign and check every message.
    [RELAY_KEYS_ENV]: callerEnv[RELAY_KEYS_ENV] ?? generateRelayKeys(relayNames(base)),
  };
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

/**
 * Starts the relay, supervised like a systemd unit with Restart=always: a relay that dies is started
 * again and re-adopts the proxy processes it left running.
 *
 * @returns its stop: the relay, then every proxy process its backends left, their fences, then its state
 */
function startRelay(
  root: string,
  home: string,
  stateDir: string,
  env: Record<string, string>,
  logger: Logger,
  fenceUid: number | undefined,
): () => Promise<void> {
  logger.info('starting the relay', { fenceUid });
  const relay = supervise(
    () => startChild('relay', [join(root, 'dist', 'relay', 'main.js')], env, join(home, 'logs', 'relay.log')),
    join(home, 'relay.pid'),
    (code, signal) => logger.warn('the relay exited; restarting it', { code, signal }),
  );
  return async () => {
    await relay.stop();
    // Each backend keeps its state in its own directory under it (`<stateDir>/<provider>`).
    let stopped = 0;
    for (const dir of backendDirs(stateDir)) stopped += await stopAllInstances(dir);
    // Its proxies are gone, so are their fences (the uids are this stack's alone).
    if (fenceUid !== undefined)
      for (const [i, backend] of LOCAL_RELAY_CONFIG.backends.entries())
        await removeFence(backend.provider, localRunAs(String(fenceUid), i).uid);
    rmSync(stateDir, { recursive: true, force: true });
    logger.info('stopped the relay and its proxy processes', { proxies: stopped });
  };
}

/**
 * Publishes each scheduled tick every interval (what Cloud Scheduler does), and the provider-health
 * tick once at once, so the monitor checks every provider as soon as the stack starts.
 *
 * @returns the stop of the timers
 */
function startSchedules(pubsub: PubSub, ticks: ScheduledTick[], logger: Logger): () => Promise<void> {
  const publishTick = (tick: ScheduledTick) => {
    pubsub
      .topic(tick.topic)
      .publishMessage({ json: tick.data })
      .catch((err: unknown) => logger.warn('scheduled publish failed', { schedule: tick.name, error: err }));
  };
  const timers = ticks.map((tick) => setInterval(() => publishTick(tick), tick.intervalSeconds * 1000));
  for (const tick of ticks) if (tick.topic === TOPICS.healthTicks) publishTick(tick);
  return () => {
    timers.forEach(clearInterval);
    return Promise.resolve();
  };
}

/**
 * What `<home>/local.env` holds: the project, the emulators, the API, its admin token
 * (`EGRESS_TOKEN`) and the least token that can discover (`EGRESS_DISCOVER_TOKEN`, the gateway's).
 */
function localEnv(config: Config, emulators: RunningEmulators, apiUrl: string): Record<string, string> {
  return {
    GOOGLE_CLOUD_PROJECT: config.project,
    FIRESTORE_EMULATOR_HOST: emulators.firestoreHost,
    PUBSUB_EMULATOR_HOST: emulators.pubsubHost,
    EGRESS_API_URL: apiUrl,
    EGRESS_TOKEN: leastToken(config.apiTokens, 'admin') ?? '',
    EGRESS_DISCOVER_TOKEN: leastToken(config.apiTokens, 'discover') ?? '',
  };
}

/** Writes `<home>/local.env`, which the CLI and the samples read to find this stack. */
function writeLocalEnv(home: string, values: Record<string, string>): void {
  const file = join(home, 'local.env');
  // It holds the admin token: the user's alone (mode applies at creation; chmod covers an old file).
  writeFileSync(
    file,
    Object.entries(values)
      .map(([k, v]) => `${k}=${v}\n`)
      .join(''),
    { mode: 0o600 },
  );
  chmodSync(file, 0o600);
}
