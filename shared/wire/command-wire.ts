/** Commands to and from the wire: a create's credentials sealed on the way out and opened by the relay it is for. */
import { ValidationError } from '../errors.js';
import type { RelayCommand, WireCommand } from './protocol.js';
import { openCredentials, sealCredentials } from './sealed-credentials.js';
import type { SigningKey } from './signature.js';

const FIELD = 'spec.credentials';

/**
 * The command as published: sealed under `key` (the relay's signing key); without a key (unsigned
 * development only) as it is.
 */
export function toWire(command: RelayCommand, key: SigningKey | undefined): WireCommand {
  if (command.kind !== 'create' || !key) return command;
  const context = { relay: command.relay, commandId: command.commandId, name: command.spec.name };
  return {
    ...command,
    spec: { ...command.spec, credentials: sealCredentials(key, context, command.spec.credentials) },
  };
}

/**
 * The command as the relay applies it, its credentials opened with the relay's keys.
 *
 * @param keys - the relay's keys; undefined only for a relay running unsigned (development)
 * @throws ValidationError on `spec.credentials`: sealed but not openable, sealed for a relay without
 *   keys, or in clear to a relay with keys (it accepts no password that crossed the bus in clear)
 */
export function fromWire(wire: WireCommand, keys: readonly SigningKey[] | undefined): RelayCommand {
  if (wire.kind !== 'create') return wire;
  const { credentials } = wire.spec;
  if ('password' in credentials) {
    if (keys) throw new ValidationError(FIELD, 'is in clear: this relay has keys and accepts only sealed credentials');
    return { ...wire, spec: { ...wire.spec, credentials } };
  }
  if (!keys) throw new ValidationError(FIELD, 'is sealed, and this relay has no keys (EGRESS_RELAY_KEYS) to open it');
  const context = { relay: wire.relay, commandId: wire.commandId, name: wire.spec.name };
  return { ...wire, spec: { ...wire.spec, credentials: openCredentials(keys, context, credentials, FIELD) } };
}
