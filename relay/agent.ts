/** The relay agent: pulls commands, applies them on its backends, probes, and reports back. */
import { randomUUID } from 'node:crypto';
import { ROOT_CONTEXT, SpanKind } from '@opentelemetry/api';
import type { PubSub } from '@google-cloud/pubsub';
import { decodeBody, type BusMessage } from '../shared/bus/message.js';
import { createPubSubBus } from '../shared/bus/pubsub.js';
import { toValidationError } from '../shared/domain/proxy.js';
import type { Logger } from '../shared/logger.js';
import type { ProbeOptions, ProbeResult } from '../shared/probe/probe.js';
import { RELAY_COMMANDS_TOPIC, relayCommandSchema, type CommandResult } from '../shared/relay/protocol.js';
import { signatureAttributes, verifySignature, type SigningKey } from '../shared/relay/signature.js';
import { messagingAttributes } from '../shared/telemetry/invocation.js';
import { contextFromAttributes, traceparentOf } from '../shared/telemetry/propagation.js';
import { inSpan } from '../shared/telemetry/spans.js';
import type { RelayBackend } from './backends/backend.js';
import { commandTarget, createCommandExecutor, type CommandExecutor } from './commands.js';
import { relayStatePath, type RelayConfig } from './config.js';
import { CommandLedger } from './ledger.js';
import { HealthBook, probeCreated, probeRound, type ProbeRoundDeps } from './probes.js';
import type { CommandMessage, CommandSubscription } from './pull-subscription.js';
import { buildReport } from './report.js';
import { TraceBook } from './traces.js';

/** What the agent runs with. The caller owns the backends (and closes them after `stop`). */
export interface RelayAgentDeps {
  config: RelayConfig;
  pubsub: PubSub;
  /** Backends by provider name. */
  backends: ReadonlyMap<string, RelayBackend>;
  logger: Logger;
  now?: () => number;
  /** The command ledger file; defaults to {@link relayStatePath}. */
  ledgerFile?: string;
  /** Opens the command subscription; default: the client library's streaming pull. */
  subscribe?: (name: string, maxInFlight: number) => CommandSubscription;
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

/** Commands handled at once; more stay with Pub/Sub. */
const MAX_IN_FLIGHT = 8;
const STOP_GRACE_MS = 10_000;

/**
 * Creates the relay agent. Only commands addressed to `config.relay` are applied (the Pub/Sub
 * emulator does not enforce subscription filters); a malformed command is logged with its field
 * and acknowledged, never redelivered in a loop.
 */
export function createRelayAgent(deps: RelayAgentDeps): RelayAgent {
  const { config, logger } = deps;
  const now = deps.now ?? Date.now;
  const bus = createPubSubBus(deps.pubsub);
  const health = new HealthBook();
  const traces = new TraceBook(undefined, now);
  const results: CommandResult[] = [];
  const inFlight = new Set<Promise<void>>();
  let bootId = '';
  let startedAt = 0;
  let seq = 0;
  let ledger: CommandLedger | undefined;
  let executor: CommandExecutor | undefined;
  let subscription: CommandSubscription | undefined;
  let loops: Loop[] = [];
  let stopping = false;

  const publishReport = async (): Promise<void> => {
    const current = ledger;
    if (!current) throw new Error('the relay agent is not started');
    const batch = results.slice();
    // A report carrying results continues the trace of the (first) command it reports on.
    const { parent, links } = traces.parentOf({ results: batch });
    const mark = traces.mark();
    const options = {
      parent: parent ? contextFromAttributes({ traceparent: parent }) : ROOT_CONTEXT,
      links,
      attributes: { 'relay.id': config.relay, 'relay.report.results': batch.length },
    };
    await inSpan('relay.report', options, async (span) => {
      const report = await buildReport({
        relay: config.relay,
        bootId,
        seq: seq++,
        startedAt,
        sentAt: now(),
        backends: deps.backends,
        health,
        ledger: current,
        results: batch,
        traces: traces.live(),
      });
      span.setAttributes({ 'relay.report.seq': report.seq, 'relay.report.instances': report.instances.length });
      const signing = deps.keys?.[0];
      const signature = signing ? signatureAttributes(signing, 'report', report) : {};
      await bus.publish(config.reportsTopic, report, { relay: config.relay, ...signature });
      // Only what this report carried is cleared; results recorded meanwhile wait for the next one.
      results.splice(0, report.results.length);
      traces.settle(report, mark);
      logger.debug('report published', {
        seq: report.seq,
        instances: report.instances.length,
        results: report.results.length,
      });
    });
  };
  const reportNow = coalesce(publishReport);
  const probeDeps: ProbeRoundDeps = {
    backends: deps.backends,
    book: health,
    echoUrl: config.echoUrl,
    timeoutMs: config.probeTimeoutSeconds * 1000,
    logger,
    now,
    traceOf: (instance) => traces.get(instance),
    ...(deps.probe && { probe: deps.probe }),
  };

  const handle = async (message: CommandMessage): Promise<void> => {
    const decoded = decodeBody(
      message.id,
      message.publishTime.getTime(),
      message.attributes ?? {},
      message.data.toString('utf8'),
    );
    const span = {
      kind: SpanKind.CONSUMER,
      parent: contextFromAttributes(decoded.attributes),
      attributes: {
        ...messagingAttributes(decoded, RELAY_COMMANDS_TOPIC, config.subscription),
        'relay.id': config.relay,
      },
    };
    await inSpan(`process ${RELAY_COMMANDS_TOPIC}`, span, () => execute(message, decoded));
  };

  const execute = async (message: CommandMessage, decoded: BusMessage): Promise<void> => {
    const addressedTo = decoded.attributes['relay'];
    if (addressedTo !== undefined && addressedTo !== config.relay) {
      logger.debug('ignoring a command for another relay', { messageId: decoded.id, relay: addressedTo });
      message.ack();
      return;
    }
    const refused = deps.keys && verifySignature(deps.keys, 'command', decoded.attributes, decoded.text);
    if (refused) {
      logger.warn('relay command refused', { messageId: decoded.id, field: refused.field, reason: refused.reason });
      message.ack();
      return;
    }
    if (decoded.decodeError) {
      logger.warn('invalid relay command', { messageId: decoded.id, reason: decoded.decodeError });
      message.ack();
      return;
    }
    const parsed = relayCommandSchema.safeParse(decoded.json);
    if (!parsed.success) {
      const invalid = toValidationError(parsed.error);
      logger.warn('invalid relay command', { messageId: decoded.id, field: invalid.field, reason: invalid.reason });
      message.ack();
      return;
    }
    const command = parsed.data;
    if (command.relay !== config.relay) {
      logger.debug('ignoring a command for another relay', { messageId: decoded.id, relay: command.relay });
      message.ack();
      return;
    }
    const run = executor;
    if (!run) throw new Error('the relay agent is not started');
    // Remembered before the backend acts: any report that lists the instance from now on carries it.
    traces.remember(commandTarget(command), traceparentOf());
    const outcome = await run.execute(command);
    traces.finished(commandTarget(command));
    if (outcome.kind === 'retry') {
      message.nack();
      return;
    }
    results.push(outcome.result);
    message.ack();
    // A created instance is probed first, so this report can carry its health (see probeCreated).
    const created = command.kind === 'create' && outcome.result.ok;
    const probed = created
      ? probeCreated(probeDeps, command.provider, command.spec.name).catch((err: unknown) =>
          logger.debug('probe after create failed; the probe round retries', { error: err }),
        )
      : Promise.resolve();
    probed
      .then(() => reportNow())
      .catch((err: unknown) => logger.warn('report after a command failed; the next one carries it', { error: err }));
  };

  const onMessage = (message: CommandMessage): void => {
    if (stopping) {
      message.nack();
      return;
    }
    const task = handle(message).catch((err: unknown) => {
      logger.error('command handling failed; asking for redelivery', { messageId: message.id, error: err });
      message.nack();
    });
    inFlight.add(task);
    void task.finally(() => inFlight.delete(task));
  };

  return {
    async start() {
      if (ledger) throw new Error('the relay agent is already started');
      bootId = randomUUID();
      startedAt = now();
      stopping = false;
      ledger = await CommandLedger.load(deps.ledgerFile ?? relayStatePath(config), logger, now);
      executor = createCommandExecutor({
        backends: deps.backends,
        ledger,
        installationId: config.installationId,
        logger,
      });
      subscription = deps.subscribe
        ? deps.subscribe(config.subscription, MAX_IN_FLIGHT)
        : deps.pubsub.subscription(config.subscription, {
            flowControl: { maxMessages: MAX_IN_FLIGHT, allowExcessMessages: false },
          });
      subscription.on('message', onMessage);
      subscription.on('error', (err: unknown) =>
        logger.error('command subscription failed', { subscription: config.subscription, error: err }),
      );
      const probe = () =>
        inSpan('relay.probe-round', { parent: ROOT_CONTEXT, attributes: { 'relay.id': config.relay } }, () =>
          probeRound(probeDeps),
        );
      // Probe once before the first report: a report without health would make every Ready proxy
      // look unprobed (Provisioning) for a moment after each relay restart.
      await probe().catch((err: unknown) => logger.warn('first probe round failed', { error: err }));
      loops = [
        startLoop(config.probeIntervalSeconds * 1000, probe, logger, 'probe'),
        startLoop(config.reportIntervalSeconds * 1000, reportNow, logger, 'report'),
      ];
      logger.info('relay started', {
        relay: config.relay,
        bootId,
        subscription: config.subscription,
        providers: [...deps.backends.keys()],
      });
    },

    async stop() {
      if (!ledger || stopping) return;
      stopping = true;
      await Promise.all(loops.map((l) => l.stop()));
      await withTimeout(Promise.allSettled([...inFlight]), STOP_GRACE_MS);
      if (subscription) {
        subscription.removeListener('message', onMessage);
        await subscription
          .close()
          .catch((err: unknown) => logger.warn('closing the subscription failed', { error: err }));
      }
      await reportNow().catch((err: unknown) => logger.warn('final report failed', { error: err }));
      ledger = undefined;
      logger.info('relay stopped; proxy instances keep running', { relay: config.relay });
    },

    reportNow,
  };
}

interface Loop {
  stop(): Promise<void>;
}

/** Runs `fn` now and then `intervalMs` after each run ends (never two at once). */
function startLoop(intervalMs: number, fn: () => Promise<void>, logger: Logger, name: string): Loop {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let current: Promise<void> = Promise.resolve();
  const tick = () => {
    current = fn()
      .catch((err: unknown) => logger.warn(`${name} failed`, { error: err }))
      .finally(() => {
        if (!stopped) timer = setTimeout(tick, intervalMs);
      });
  };
  tick();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await current;
    },
  };
}

/**
 * Wraps `fn` so that calls while one run is under way share a single follow-up run, which starts
 * after it: every caller's state is covered by the run it awaits, and runs never overlap.
 */
function coalesce(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let queued: Promise<void> | undefined;
  const launch = (): Promise<void> => {
    const run = fn().finally(() => {
      if (running === run) running = undefined;
    });
    running = run;
    return run;
  };
  return () => {
    if (!running) return launch();
    queued ??= running
      .catch(() => undefined)
      .then(() => {
        queued = undefined;
        return launch();
      });
    return queued;
  };
}

async function withTimeout(promise: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([promise, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
