/**
 * The relay's command loop body: each pulled message is checked (addressed here, signed, well
 * formed), applied on its backend, acknowledged or handed back, and reported.
 */
import { SpanKind } from '@opentelemetry/api';
import { decodeBody, type BusMessage } from '../shared/bus/message.js';
import { toValidationError } from '../shared/domain/proxy.js';
import type { Logger } from '../shared/logger.js';
import { TOPICS } from '../shared/bus/topics.js';
import { relayCommandSchema, type RelayCommand } from '../shared/relay/protocol.js';
import { verifySignature, type SigningKey } from '../shared/relay/signature.js';
import { messagingAttributes } from '../shared/telemetry/invocation.js';
import { contextFromAttributes, traceparentOf } from '../shared/telemetry/propagation.js';
import { inSpan } from '../shared/telemetry/spans.js';
import { commandTarget, type CommandExecutor } from './commands.js';
import type { RelayConfig } from './config.js';
import { withTimeout } from './loops.js';
import { probeCreated, type ProbeRoundDeps } from './probes.js';
import type { CommandMessage } from './command-subscription.js';
import type { Reporter } from './reporter.js';
import type { TraceBook } from './traces.js';

export interface CommandIntakeDeps {
  config: Pick<RelayConfig, 'relay' | 'subscription'>;
  /** A command is applied only when one of these signed it; without keys nothing is checked. */
  keys?: readonly SigningKey[] | undefined;
  traces: TraceBook;
  probeDeps: ProbeRoundDeps;
  reporter: Pick<Reporter, 'record' | 'reportNow'>;
  logger: Logger;
}

export interface CommandIntake {
  /** Accepts commands again, applying them with `executor`. */
  open(executor: CommandExecutor): void;
  /** The subscription's `message` listener. */
  onMessage: (message: CommandMessage) => void;
  /** Hands every new message back (nack) from now on. */
  close(): void;
  /** Waits for the commands in flight, `ms` at most. */
  drain(ms: number): Promise<void>;
}

export function createCommandIntake(deps: CommandIntakeDeps): CommandIntake {
  // Over 60 lines because it holds the intake's methods over one state (executor, closed, in flight).
  const { config, logger, traces } = deps;
  const inFlight = new Set<Promise<void>>();
  let executor: CommandExecutor | undefined;
  let closed = true;

  const execute = async (message: CommandMessage, decoded: BusMessage): Promise<void> => {
    const command = admit(deps, decoded);
    if (!command) return message.ack();
    const run = executor;
    if (!run) throw new Error('the relay agent is not started');
    // Remembered before the backend acts: any report that lists the instance from now on carries it.
    traces.remember(commandTarget(command), traceparentOf());
    const outcome = await run.execute(command);
    traces.finished(commandTarget(command));
    if (outcome.kind === 'retry') return message.nack();
    deps.reporter.record(outcome.result);
    message.ack();
    // A created instance is probed first, so this report can carry its health (see probeCreated).
    const created = command.kind === 'create' && outcome.result.ok;
    const probed = created
      ? probeCreated(deps.probeDeps, command.provider, command.spec.name).catch((err: unknown) =>
          logger.debug('probe after create failed; the probe round retries', { error: err }),
        )
      : Promise.resolve();
    probed
      .then(() => deps.reporter.reportNow())
      .catch((err: unknown) => logger.warn('report after a command failed; the next one carries it', { error: err }));
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
        ...messagingAttributes(decoded, TOPICS.relayCommands, config.subscription),
        'relay.id': config.relay,
      },
    };
    await inSpan(`process ${TOPICS.relayCommands}`, span, () => execute(message, decoded));
  };

  return {
    open(next) {
      executor = next;
      closed = false;
    },
    onMessage: (message) => {
      if (closed) {
        message.nack();
        return;
      }
      const task = handle(message).catch((err: unknown) => {
        logger.error('command handling failed; asking for redelivery', { messageId: message.id, error: err });
        message.nack();
      });
      inFlight.add(task);
      void task.finally(() => inFlight.delete(task));
    },
    close() {
      closed = true;
    },
    drain: (ms) => withTimeout(Promise.allSettled([...inFlight]), ms),
  };
}

/** The command in `decoded` when it is this relay's, signed and well formed; otherwise undefined (to acknowledge). */
function admit(deps: CommandIntakeDeps, decoded: BusMessage): RelayCommand | undefined {
  const { config, logger } = deps;
  const addressedTo = decoded.attributes['relay'];
  if (addressedTo !== undefined && addressedTo !== config.relay) {
    logger.debug('ignoring a command for another relay', { messageId: decoded.id, relay: addressedTo });
    return undefined;
  }
  const refused = deps.keys && verifySignature(deps.keys, 'command', decoded.attributes, decoded.text);
  if (refused) {
    logger.warn('relay command refused', { messageId: decoded.id, field: refused.field, reason: refused.reason });
    return undefined;
  }
  if (decoded.decodeError) {
    logger.warn('invalid relay command', { messageId: decoded.id, reason: decoded.decodeError });
    return undefined;
  }
  const parsed = relayCommandSchema.safeParse(decoded.json);
  if (!parsed.success) {
    const invalid = toValidationError(parsed.error);
    logger.warn('invalid relay command', { messageId: decoded.id, field: invalid.field, reason: invalid.reason });
    return undefined;
  }
  if (parsed.data.relay !== config.relay) {
    logger.debug('ignoring a command for another relay', { messageId: decoded.id, relay: parsed.data.relay });
    return undefined;
  }
  return parsed.data;
}
