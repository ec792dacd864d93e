/** Executing relay commands on backends: one at a time per instance, refusing stale ones. */
import { asEgressError, PermanentError, RetryableError, type ErrorInfo } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { CommandResult, RelayCommand } from '../shared/wire/protocol.js';
import { inSpan } from '../shared/telemetry/spans.js';
import type { RelayBackend } from './backends/backend.js';
import { KeyedSerializer } from './keyed-serializer.js';
import { ledgerKey, type CommandLedger } from './ledger.js';

/** What executing one command came to. */
export type CommandOutcome =
  /** Finished (applied, failed for good, or skipped as stale): report `result`, then ack. */
  | { kind: 'done'; result: CommandResult; skipped: boolean }
  /** The relay could not record the outcome: nack so Pub/Sub redelivers; nothing is reported. */
  | { kind: 'retry'; error: RetryableError };

/** What executing commands needs. */
export interface CommandDeps {
  /** Backends by provider name. */
  backends: ReadonlyMap<string, RelayBackend>;
  ledger: CommandLedger;
  /** Creates for another installation are refused: their instances would never be listed. */
  installationId: string;
  logger: Logger;
}

/** The instance a command is about. */
export function commandTarget(command: RelayCommand): string {
  return command.kind === 'create' ? command.spec.name : command.name;
}

/**
 * Applies one command now, without ordering (see {@link createCommandExecutor} for that).
 * A command issued before the last one applied to the same instance is skipped and reported ok,
 * so a late create cannot resurrect a deleted instance; so is a copy of the delete last applied.
 * Backend errors, transient ones included, become the result's `error`; only a ledger that cannot
 * record the outcome asks for redelivery.
 */
export async function applyCommand(command: RelayCommand, deps: CommandDeps): Promise<CommandOutcome> {
  const name = commandTarget(command);
  const base = { commandId: command.commandId, provider: command.provider, name, kind: command.kind };
  const log = deps.logger.child({
    commandId: command.commandId,
    kind: command.kind,
    provider: command.provider,
    instance: name,
  });
  const failed = (info: ErrorInfo): CommandOutcome => ({
    kind: 'done',
    skipped: false,
    result: { ...base, ok: false, error: wireError(info) },
  });

  const backend = deps.backends.get(command.provider);
  if (!backend) {
    log.warn('command for a provider this relay does not run');
    return failed(new PermanentError(`this relay runs no provider "${command.provider}"`, 'provider').toInfo());
  }
  if (command.kind === 'create' && command.spec.installationId !== deps.installationId) {
    return failed(
      new PermanentError(
        `this relay serves installation "${deps.installationId}", not "${command.spec.installationId}"`,
        'spec.installationId',
      ).toInfo(),
    );
  }
  const key = ledgerKey(command.provider, name);
  const last = deps.ledger.get(key);
  if (last && command.issuedAt < last.issuedAt) {
    log.info('skipping a stale command', {
      lastCommandId: last.commandId,
      lastIssuedAt: last.issuedAt,
      issuedAt: command.issuedAt,
    });
    return { kind: 'done', skipped: true, result: { ...base, ok: true } };
  }
  // A copy of the delete last applied (a resend after a restart, and the copy Pub/Sub redelivers):
  // the instance is gone, and only a later command could have brought it back.
  if (command.kind === 'delete' && last?.commandId === command.commandId && !last.failed) {
    log.info('skipping a delete already applied');
    return { kind: 'done', skipped: true, result: { ...base, ok: true } };
  }

  const error = await runOnBackend(command, backend, log);
  try {
    await deps.ledger.record(key, {
      commandId: command.commandId,
      issuedAt: command.issuedAt,
      ...(error && { failed: true }),
    });
  } catch (err) {
    // The effect happened but cannot be remembered: redelivery re-applies it idempotently.
    return {
      kind: 'retry',
      error: new RetryableError(`cannot persist the command ledger: ${String(err)}`, 5000, { cause: err }),
    };
  }
  if (error) return failed(error);
  log.info('command applied');
  return { kind: 'done', skipped: false, result: { ...base, ok: true } };
}

/**
 * Runs the command on its backend, in a `backend.<kind>` span.
 *
 * @returns the failure, logged; undefined when the backend did it
 */
async function runOnBackend(command: RelayCommand, backend: RelayBackend, log: Logger): Promise<ErrorInfo | undefined> {
  try {
    const attributes = {
      'provider.name': command.provider,
      'provider.type': backend.type,
      'provider.operation': command.kind,
      'provider.instance': commandTarget(command),
      'relay.command_id': command.commandId,
    };
    await inSpan(`backend.${command.kind}`, { attributes }, async () => {
      if (command.kind === 'create') await backend.create(command.spec);
      else await backend.delete(command.name);
    });
    return undefined;
  } catch (err) {
    // Every backend failure, transient ones included, is reported: the reconciler backs off
    // (capped, exponential) instead of Pub/Sub redelivering into a hot loop.
    const typed = asEgressError(err);
    log.warn('command failed', { error: typed.message, code: typed.code });
    return typed.toInfo();
  }
}

/** Applies commands in arrival order per instance; commands for different instances overlap. */
export interface CommandExecutor {
  execute(command: RelayCommand): Promise<CommandOutcome>;
  /** Resolves when every submitted command has finished. */
  idle(): Promise<void>;
}

/** @returns an executor that serialises commands per `provider/name` and applies each with {@link applyCommand}. */
export function createCommandExecutor(deps: CommandDeps): CommandExecutor {
  const serial = new KeyedSerializer();
  return {
    execute: (command) =>
      serial.run(ledgerKey(command.provider, commandTarget(command)), () => applyCommand(command, deps)),
    idle: () => serial.idle(),
  };
}

/** The wire form of an error: only defined keys, message within the report schema's limit. */
function wireError(info: ErrorInfo): ErrorInfo {
  const out: ErrorInfo = { code: info.code, message: info.message.slice(0, 2048) };
  if (info.field !== undefined) out.field = info.field.slice(0, 256);
  if (info.retryAfterMs !== undefined) out.retryAfterMs = info.retryAfterMs;
  return out;
}
