/**
 * Never reachable: instances of one proxy replaced in a row without ever passing a probe are
 * counted (by instance, so a redelivered check counts one once), and at `neverReadyLimit` creation
 * stops with a reason a user can act on (docs/architecture.md "Never reachable").
 */
import type { ProxyStatus } from '../domain/status.js';
import { proxyNotReached } from '../probe/probe.js';
import type { Instance } from '../providers/contract.js';

/** An instance about to be replaced (or deleted for good) without ever having passed a probe. */
export interface NeverReady {
  /** The instance's `createdAt`, as `status.instance.createdAt` spells it: what is counted. */
  instance: string;
  /** `ip:port` it was probed at; empty when it never ran. */
  address: string;
  error: string;
  /** This one reaches the limit: creation stops. */
  stop: boolean;
}

type Unreachable = NonNullable<ProxyStatus['unreachable']>;

const iso = (ms: number) => new Date(ms).toISOString();

/** Whether `instance` passed a probe: in this observation, or in an earlier one of the same instance. */
export function passedProbe(previous: ProxyStatus['instance'], instance: Instance): boolean {
  if (instance.health?.ok === true) return true;
  return previous?.createdAt === iso(instance.createdAt) && previous.passedProbe === true;
}

/**
 * What to count when `instance` is replaced now, or undefined when it passed a probe once.
 *
 * @param limit - `neverReadyLimit`: this many such instances in a row stop creation
 */
export function neverReadyOf(
  status: ProxyStatus,
  generation: number,
  instance: Instance,
  limit: number,
): NeverReady | undefined {
  if (passedProbe(status.instance, instance)) return undefined;
  // Only a proxy nobody could connect to counts (or one that stopped before any probe): a failure at
  // or behind a proxy that answered (credentials, its way out, the echo endpoint being down) says
  // nothing about the path to it, and counting it would stop a whole fleet during an echo outage.
  const error = instance.health?.ok === false ? instance.health.error : undefined;
  if (error !== undefined && !proxyNotReached(error)) return undefined;
  if (countedEarlier(status.unreachable, generation, instance)) return undefined;
  const id = iso(instance.createdAt);
  const counted = countedFor(status.unreachable, generation);
  // The address the prober used (shared/reconcile/observe.ts): the VPC one where there is one.
  const probed = instance.probeIp || instance.ip;
  const tried = counted.includes(id) ? counted.length : counted.length + 1;
  return {
    instance: id,
    address: probed ? `${probed}:${instance.port}` : '',
    error: instance.health?.error ?? `instance was ${instance.state} before passing a probe`,
    stop: tried >= limit,
  };
}

/**
 * Whether `instance` was counted for an earlier generation than `generation`: the last instance of
 * a stopped count, still on its way out when the spec was applied again (the relay's report that
 * the deletion is done can come seconds after the apply). The new generation's count is of
 * instances made for it, so such an instance is not counted again.
 */
export function countedEarlier(record: ProxyStatus['unreachable'], generation: number, instance: Instance): boolean {
  return record !== undefined && record.generation !== generation && record.instances.includes(iso(instance.createdAt));
}

/** The instances counted for `generation` (an older generation's count no longer applies). */
function countedFor(record: ProxyStatus['unreachable'], generation: number): string[] {
  return record?.generation === generation ? record.instances : [];
}

/** The record after counting `seen`: once per instance, however often it is seen. */
export function countNeverReady(
  previous: ProxyStatus['unreachable'],
  generation: number,
  seen: NeverReady,
): Unreachable {
  const counted = countedFor(previous, generation);
  const instances = counted.includes(seen.instance) ? counted : [...counted, seen.instance];
  const stopped = seen.stop || (previous?.generation === generation && previous.stopped);
  return { generation, instances, address: seen.address, error: seen.error, stopped };
}

/** The number of instances counted in a row with `seen` included. */
export function triedWith(previous: ProxyStatus['unreachable'], generation: number, seen: NeverReady): number {
  return countNeverReady(previous, generation, seen).instances.length;
}

/** Why creation stopped, for the `Ready` condition and the event: what was probed, how, what to check. */
export function stoppedMessage(record: Pick<Unreachable, 'address' | 'error'>, tried: number): string {
  const where = record.address ? `through ${record.address}` : 'before it ran';
  return (
    `never reachable: ${tried} instance${tried === 1 ? '' : 's'} in a row never passed a probe ${where} ` +
    `(last error: ${record.error}); creation stopped and the last instance is deleted. Likely causes: a ` +
    `firewall that keeps the prober (the check function, through its VPC connector; ` +
    `the relay, for relay-backed providers) from the proxy port; the proxy port not listening on the instance; the instance's start-up ` +
    `(cloud-init) failing. Fix the cause, then apply the proxy again: the same spec resumes creation.`
  );
}
