/**
 * Trust on first use of an instance's TLS listener: the first probe through it that succeeds
 * learns its certificate's fingerprint, which then stays pinned in `status.instance` for the
 * instance's life (`createdAt` tells a replacement apart). A probe that meets another certificate
 * fails, and the `TlsPinned` condition says so.
 */
import type { Condition, ProxyStatus } from '../domain/status.js';
import type { Instance } from '../providers/contract.js';
import { TlsPinError } from '../tls/pinned.js';

type StoredInstance = ProxyStatus['instance'];

/** The fingerprint pinned for this incarnation of the instance, if any. */
export function pinnedFingerprint(
  stored: StoredInstance,
  instance: Pick<Instance, 'name' | 'createdAt'>,
): string | undefined {
  const same = stored?.name === instance.name && Date.parse(stored.createdAt) === instance.createdAt;
  return same ? stored.tlsFingerprint : undefined;
}

/**
 * The instance with its health judged against the pin: a probe that succeeded through a listener
 * presenting another certificate (a relay's probe, which pins only in its memory) counts as a
 * failed one. The check function's own probe refuses such a listener itself.
 *
 * @param previousFailures - the stored health's count, continued by a failure found here
 */
export function judgeAgainstPin(instance: Instance, pinned: string | undefined, previousFailures: number): Instance {
  const { health } = instance;
  const presented = health?.tlsFingerprint;
  if (!health?.ok || pinned === undefined || presented === undefined || presented === pinned) return instance;
  const { egressIp: _ip, ...rest } = health;
  const error = new TlsPinError(pinned, presented).message;
  return { ...instance, health: { ...rest, ok: false, error, consecutiveFailures: previousFailures + 1 } };
}

/**
 * The fingerprint to keep for the instance: the pinned one, else the one its last probe learnt
 * (only a probe that succeeded teaches one).
 */
export function fingerprintToKeep(instance: Instance, pinned: string | undefined): string | undefined {
  if (pinned !== undefined) return pinned;
  return instance.health?.ok ? instance.health.tlsFingerprint : undefined;
}

/** The `TlsPinned` condition of an instance with a TLS listener (undefined without one). */
export function tlsCondition(
  instance: Instance,
  pinned: string | undefined,
): Omit<Condition, 'type' | 'lastTransitionTime'> | undefined {
  if (instance.tlsPort === undefined) return undefined;
  const presented = instance.health?.tlsFingerprint;
  if (pinned !== undefined && presented !== undefined && presented !== pinned)
    return { status: 'False', reason: 'Changed', message: new TlsPinError(pinned, presented).message };
  const kept = fingerprintToKeep(instance, pinned);
  if (kept === undefined)
    return { status: 'Unknown', reason: 'NotProbed', message: 'no probe has passed through the TLS listener yet' };
  return { status: 'True', reason: 'Pinned', message: `certificate sha256 ${kept}, learnt by the first TLS probe` };
}
