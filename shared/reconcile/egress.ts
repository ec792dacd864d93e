/**
 * Egress-IP verification: flags a proxy whose egress IP changed, and proxies sharing one egress IP.
 * The fleet-wide comparison (one indexed query) runs while the stored document does not show the
 * IP (new, changed, or back after failed probes), once more after it does (`confirmed`), while the
 * proxy is flagged as sharing, and on request — not on every check, and not on a heartbeat.
 *
 * Why one comparison after the IP is stored is enough: two proxies A and B that take the same IP
 * each store it, then compare. Of those two comparisons, the later runs after both stores, so it
 * sees the other proxy; that side is flagged and kicks its peer (`kick`) to flag itself too. A kick
 * lost on the way is sent again when the flagged side re-records its result (once a heartbeat).
 */
import type { ProxyStatus } from '../domain/status.js';
import type { ProxyRepository } from '../store/ports.js';
import { mergeConditions } from './status.js';

export interface EgressOutcome {
  status: ProxyStatus;
  /** An event worth recording (changed or newly shared). */
  event?: { reason: string; message: string };
  /** Other proxies to look at again (they share this IP and should be flagged too). */
  kick: string[];
}

/** The IP a Ready, healthy proxy leaves from now; undefined when there is nothing to compare. */
function egressIpOf(next: ProxyStatus): string | undefined {
  return next.phase === 'Ready' && next.health?.ok ? next.health.egressIp : undefined;
}

/**
 * Whether `verifyEgress` would compare the egress IP with the fleet now: a Ready proxy whose stored
 * document does not show its IP yet (others' queries cannot find it), whose last comparison ran
 * before it did (not `confirmed`), that is flagged as sharing, or `force`.
 */
export function egressDue(previous: ProxyStatus, next: ProxyStatus, force = false): boolean {
  const ip = egressIpOf(next);
  if (!ip) return false;
  const before = previous.egress;
  return (
    force ||
    !before ||
    before.ip !== ip ||
    previous.health?.egressIp !== ip ||
    before.confirmed === false ||
    before.sharedWith.length > 0
  );
}

/**
 * @param previous - the stored status (before this check)
 * @param next - the status this check computed (with fresh health)
 * @param heartbeatMs - how long an unchanged result of a flagged proxy keeps its `checkedAt`
 * @param force - verify now (a peer reported sharing this IP)
 */
export async function verifyEgress(
  proxies: Pick<ProxyRepository, 'sharingEgressIp'>,
  name: string,
  previous: ProxyStatus,
  next: ProxyStatus,
  now: number,
  heartbeatMs: number,
  force = false,
): Promise<EgressOutcome> {
  const ip = egressIpOf(next);
  if (!ip || !egressDue(previous, next, force)) return { status: next, kick: [] };
  const before = previous.egress;
  const changed = before !== undefined && before.ip !== ip;
  // Others' queries could find this IP before this one ran: any peer that stored it concurrently
  // is either found now or finds this proxy.
  const confirmed = previous.health?.egressIp === ip;

  const sharedWith = await proxies.sharingEgressIp(ip, name);
  // A shared IP is compared on every check: an unchanged result keeps its time until the heartbeat,
  // or `checkedAt` alone would rewrite the status on every check.
  const unchanged =
    before !== undefined &&
    !changed &&
    before.sharedWith.join() === sharedWith.join() &&
    (before.confirmed ?? true) === confirmed;
  const keep = unchanged && now - Date.parse(before.checkedAt) < heartbeatMs;
  const egress = { ip, checkedAt: keep ? before.checkedAt : new Date(now).toISOString(), sharedWith, confirmed };
  let condition;
  let event: EgressOutcome['event'];
  if (changed) {
    const message = `egress IP changed from ${before.ip} to ${ip}`;
    condition = { status: 'False' as const, reason: 'Changed', message };
    event = { reason: 'EgressIpChanged', message };
  }
  if (sharedWith.length > 0) {
    const message = `egress IP ${ip} is shared with ${sharedWith.join(', ')}`;
    condition = { status: 'False' as const, reason: 'Shared', message };
    if (!before || before.sharedWith.join() !== sharedWith.join()) event = { reason: 'EgressIpShared', message };
  }
  condition ??= { status: 'True' as const, reason: 'Unique', message: `egress IP ${ip} is used by no other proxy` };
  const status = { ...next, egress, conditions: mergeConditions(next.conditions, { EgressIp: condition }, now) };
  // An unchanged sharing re-recorded (once a heartbeat) kicks every peer again: one that missed the
  // first kick is flagged now. Otherwise only peers newly found are kicked.
  const kick = unchanged && !keep ? sharedWith : sharedWith.filter((n) => !before?.sharedWith.includes(n));
  return { status, ...(event ? { event } : {}), kick };
}
