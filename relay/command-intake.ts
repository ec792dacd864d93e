/**
 * The relay's command loop body: each pulled message is checked (addressed here, signed, well
 * formed), applied on its backend, acknowledged or handed back, and reported.
 */
import { SpanKind } from '@opentelemetry/api';
import { z } from 'zod';
import { decodeBody, type BusMessage } from '../shared/bus/message.js';
import { toValidationError } from '../shared/domain/proxy.js';
import type { Logger } from '../shared/logger.js';
import { TOPICS } from '../shared/bus/topics.js';
import { ValidationError } from '../shared/errors.js';
import { fromWire } from '../shared/wire/command-wire.js';
import { wireCommandSchema, type RelayCommand } from '../shared/wire/protocol.js';
import { verifySignature, type SigningKey } from '../shared/wire/signature.js';
import { messagingAttributes } from '../shared/telemetry/invocation.js';
import { contextFromAttributes, traceparentOf } from '../shared/telemetry/propagation.js';
import { inSpan, type SpanOptions } from '../shared/telemetry/spans.js';
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

/** The relay's command intake: closed (every message handed back) until `open`. */
export function createCommandIntake(deps: CommandIntakeDeps): CommandIntake {
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
    reportSoon(deps, command, outcome.result.ok);
  };

  const handle = async (message: CommandMessage): Promise<void> => {
    const decoded = busMessage(message);
    await inSpan(`process ${TOPICS.relayCommands}`, consumerSpan(config, decoded), () => execute(message, decoded));
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

/** The bus message a pulled command message carries (decoded, or with its `decodeError`). */
function busMessage(message: CommandMessage): BusMessage {
  const text = message.data.toString('utf8');
  return decodeBody(message.id, message.publishTime.getTime(), message.attributes ?? {}, text);
}

/** The consumer span of one command: a child of the publisher's trace, with the messaging attributes. */
function consumerSpan(config: CommandIntakeDeps['config'], decoded: BusMessage): SpanOptions {
  return {
    kind: SpanKind.CONSUMER,
    parent: contextFromAttributes(decoded.attributes),
    attributes: {
      ...messagingAttributes(decoded, TOPICS.relayCommands, config.subscription),
      'relay.id': config.relay,
    },
  };
}

/**
 * Sends a report now, without waiting for it. A created instance is probed first, so the report can
 * carry its health (see probeCreated); a failed probe is left to the probe round, a failed report to
 * the next report, both logged.
 */
function reportSoon(deps: CommandIntakeDeps, command: RelayCommand, ok: boolean): void {
  const { logger } = deps;
  const probed =
    command.kind === 'create' && ok
      ? probeCreated(deps.probeDeps, command.provider, command.spec.name).catch((err: unknown) =>
          logger.debug('probe after create failed; the probe round retries', { error: err }),
        )
      : Promise.resolve();
  probed
    .then(() => deps.reporter.reportNow())
    .catch((err: unknown) => logger.warn('report after a command failed; the next one carries it', { error: err }));
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
    const about = claimedTarget(decoded.json);
    logger.warn('relay command refused', {
      messageId: decoded.id,
      ...about,
      field: refused.field,
      reason: refused.reason,
    });
    return undefined;
  }
  if (decoded.decodeError) {
    logger.warn('invalid relay command', { messageId: decoded.id, reason: decoded.decodeError });
    return undefined;
  }
  const invalid = (error: ValidationError) => {
    logger.warn('invalid relay command', {
      messageId: decoded.id,
      ...claimedTarget(decoded.json),
      field: error.field,
      reason: error.reason,
    });
    return undefined;
  };
  const parsed = wireCommandSchema.safeParse(decoded.json);
  if (!parsed.success) return invalid(toValidationError(parsed.error));
  if (parsed.data.relay !== config.relay) {
    logger.debug('ignoring a command for another relay', { messageId: decoded.id, relay: parsed.data.relay });
    return undefined;
  }
  try {
    return fromWire(parsed.data, deps.keys);
  } catch (err) {
    if (err instanceof ValidationError) return invalid(err);
    throw err;
  }
}

const optionalText = z.string().optional().catch(undefined);
/** The fields of a command that say what it is about, each kept only when it is a string. */
const claimSchema = z
  .looseObject({
    kind: optionalText,
    provider: optionalText,
    name: optionalText,
    spec: z.looseObject({ name: optionalText }).optional().catch(undefined),
  })
  .catch({});

/**
 * What a command that is not admitted says it is about (unchecked), so that the warning lands in
 * the trail of the proxy it names.
 */
function claimedTarget(json: unknown): { kind?: string; provider?: string; instance?: string } {
  const { kind, provider, name, spec } = claimSchema.parse(json);
  const instance = name ?? spec?.name;
  return {
    ...(kind ? { kind } : {}),
    ...(provider ? { provider } : {}),
    ...(instance ? { instance } : {}),
  };
}
