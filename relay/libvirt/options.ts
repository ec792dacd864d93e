/** Checks on the client's numeric options (timeouts, keepalive), shared by `connect` and the RPC engine. */

/**
 * Returns `value` when it is a positive finite number.
 * @throws RangeError naming `field` otherwise
 */
export function positive(field: string, value: number): number {
  if (!(typeof value === 'number' && Number.isFinite(value) && value > 0)) {
    throw new RangeError(`${field} must be a positive number, got ${String(value)}`);
  }
  return value;
}

/** libvirt's defaults for its client: a ping after 5 s of silence, dropped after 5 unanswered. */
export interface KeepaliveSettings {
  intervalMs: number;
  count: number;
}
