/** The relay agent: pulls commands, applies them on its backends, probes, and reports back. */
import { ROOT_CONTEXT } from '@opentelemetry/api';
import type { Bus } from '../shared/bus/pubsub.js';
import type { Logger } from '../shared/logger.js';
import type { ProbeOptions, ProbeResult } from '../shared/probe/probe.js';
import type { SigningKey } from '../shared/wire/signature.js';
import { inSpan } from '../shared/telemetry/spans.js';
import type { RelayBackend } from './backends/backend.js';
import { createCommandIntake } from './command-intake.js';
import { createCommandExecutor } from './commands.js';
import { relayStatePath, type RelayConfig } from './config.js';
import { CommandLedger } from './ledger.js';
import { startLoop, type Loop } from './loops.js';
import { HealthBook, probeRound, type ProbeRoundDeps } from './probes.js';
import type { CommandMessage, CommandSubscription, OpenCommandSubscription } from './command-subscription.js';
import { createReporter } from './reporter.js';
import { TraceBook } from './traces.js';

/** What the agent runs with. The caller owns the backends (and closes them after `stop`). */
export interface RelayAgentDeps {
  config: RelayConfig;
  /** Where reports go (`createPubSubBus` in relay/main.ts); signed reports pass `publish`'s `sign`. */
  bus: Bus;
  /** Opens the command subscription (`createPullSubscription` in relay/main.ts). */
  subscribe: OpenCommandSubscription;
  /** Backends by provider name. */
  backends: ReadonlyMap<string, RelayBackend>;
  logger: Logger;
  now?: () => number;
  /** The command ledger file; defaults to {@link relayStatePath}. */
  ledgerFile?: string;
  /** Probes one instance; default `probeThroughProxy` (shared/probe/probe.ts). */
  probe?: (opts: ProbeOptions) => Promise<ProbeResult>;
  /**
   * This relay's keys (its `EGRESS_RELAY_KEYS` entry): the first signs every report, and a command
   * is applied only when one of them signed it. Without keys nothing is signed or checked.
   */
  keys?: readonly SigningKey[] | undefined;
}

/** A running relay. */
export interface RelayAgent {
  /** Loads the ledger, subscribes, starts the probe and report loops (one of each at once). */
  start(): Promise<void>;
  /** Stops pulling, lets commands in flight finish, sends a last report; proxies keep running. */
  stop(): Promise<void>;
  /** Publishes a report now (coalesced with one already under way). */
  reportNow(): Promise<void>;
}

/**
 * Commands handled at once; more stay with Pub/Sub. A command mostly waits (for a process or a
 * guest to start listening, for one to exit): at 8, a 500-proxy churn kept all 8 busy 83 % of the
 * time at about two commands a second while the relay used a fifth of a core.
 */
const MAX_IN_FLIGHT = 16;
const STOP_GRACE_MS = 10_000;

/** What a started agent holds until it stops. */
interface Running {
  subscription: CommandSubscription;
  loops: Loop[];
}

/**
 * Creates the relay agent: three loops over shared books (health, traces, results) — the command
 * intake (relay/command-intake.ts), the probe round (relay/probes.ts) and the report
 * (relay/reporter.ts). Only commands addressed to `config.relay` are applied (the Pub/Sub emulator
 * does not enforce subscription filters); a malformed command is logged with its field and
 * acknowledged, never redelivered in a loop.
 */
export function createRelayAgent(deps: RelayAgentDeps): RelayAgent {
  const { config, logger } = deps;
  const { now, reporter, intake, probe } = agentParts(deps);
  let running: Running | undefined;
  let stopping = false;

  return {
    async start() {
      if (running) throw new Error('the relay agent is already started');
      const startedAt = now();
      stopping = false;
      const ledger = await CommandLedger.load(deps.ledgerFile ?? relayStatePath(config), logger, now);
      const bootId = reporter.begin(ledger, startedAt);
      intake.open(
        createCommandExecutor({ backends: deps.backends, ledger, installationId: config.installationId, logger }),
      );
      const subscription = subscribe(deps, intake.onMessage);
      // Probe once before the first report: a report without health would make every Ready proxy
      // look unprobed (Provisioning) for a moment after each relay restart.
      await probe().catch((err: unknown) => logger.warn('first probe round failed', { error: err }));
      const loops = [
        startLoop(config.probeIntervalSeconds * 1000, probe, logger, 'probe'),
        startLoop(config.reportIntervalSeconds * 1000, reporter.reportNow, logger, 'report'),
      ];
      running = { subscription, loops };
      logger.info('relay started', {
        relay: config.relay,
        bootId,
        subscription: config.subscription,
        providers: [...deps.backends.keys()],
      });
    },

    async stop() {
      if (!running || stopping) return;
      stopping = true;
      intake.close();
      await Promise.all(running.loops.map((l) => l.stop()));
      await intake.drain(STOP_GRACE_MS);
      running.subscription.removeListener('message', intake.onMessage);
      await running.subscription
        .close()
        .catch((err: unknown) => logger.warn('closing the subscription failed', { error: err }));
      await reporter.reportNow().catch((err: unknown) => logger.warn('final report failed', { error: err }));
      reporter.end();
      running = undefined;
      logger.info('relay stopped; proxy instances keep running', { relay: config.relay });
    },

    reportNow: () => reporter.reportNow(),
  };
}

/** The agent's parts over its shared books (health, traces): the reporter, the command intake, the probe round. */
function agentParts(deps: RelayAgentDeps) {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const health = new HealthBook();
  const traces = new TraceBook(undefined, now);
  const reporter = createReporter({
    config,
    bus: deps.bus,
    backends: deps.backends,
    health,
    traces,
    keys: deps.keys,
    logger,
    now,
  });
  const probeDeps = probeDepsOf(deps, health, traces, now);
  const intake = createCommandIntake({ config, keys: deps.keys, traces, probeDeps, reporter, logger });
  const probe = () =>
    inSpan('relay.probe-round', { parent: ROOT_CONTEXT, attributes: { 'relay.id': config.relay } }, () =>
      probeRound(probeDeps),
    );
  return { now, reporter, intake, probe };
}

function probeDepsOf(deps: RelayAgentDeps, book: HealthBook, traces: TraceBook, now: () => number): ProbeRoundDeps {
  return {
    backends: deps.backends,
    book,
    echoUrl: deps.config.echoUrl,
    timeoutMs: deps.config.probeTimeoutSeconds * 1000,
    logger: deps.logger,
    now,
    traceOf: (instance) => traces.get(instance),
    ...(deps.probe && { probe: deps.probe }),
  };
}

/** Opens the command subscription and hands its messages to `onMessage`. */
function subscribe(deps: RelayAgentDeps, onMessage: (message: CommandMessage) => void): CommandSubscription {
  const { config, logger } = deps;
  const subscription = deps.subscribe(config.subscription, MAX_IN_FLIGHT);
  subscription.on('message', onMessage);
  subscription.on('error', (err: unknown) =>
    logger.error('command subscription failed', { subscription: config.subscription, error: err }),
  );
  return subscription;
}
