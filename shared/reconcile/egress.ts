/**
 * Egress-IP verification: flags a proxy whose egress IP changed, and proxies sharing one egress IP.
 * The fleet-wide comparison (one indexed query) runs only when the IP is new or changed, while the
 * proxy is flagged as sharing, on request, or once per heartbeat — not on every check.
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

/**
 * Whether `verifyEgress` would compare the egress IP with the fleet now: a Ready proxy whose IP is
 * new or changed, is flagged as sharing, or was last compared a heartbeat ago (or `force`).
 */
export function egressDue(
  previous: ProxyStatus,
  next: ProxyStatus,
  now: number,
  heartbeatMs: number,
  force = false,
): boolean {
  const ip = next.health?.ok ? next.health.egressIp : undefined;
  if (next.phase !== 'Ready' || !ip) return false;
  const before = previous.egress;
  return (
    force ||
    !before ||
    before.ip !== ip ||
    before.sharedWith.length > 0 ||
    now - Date.parse(before.checkedAt) >= heartbeatMs
  );
}

/**
 * @param previous - the stored status (before this check)
 * @param next - the status this check computed (with fresh health)
 * @param force - verify now regardless of the heartbeat (a peer reported sharing this IP)
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
  const ip = next.health?.ok ? next.health.egressIp : undefined;
  if (!ip || !egressDue(previous, next, now, heartbeatMs, force)) return { status: next, kick: [] };
  const before = previous.egress;
  const changed = before !== undefined && before.ip !== ip;

  const sharedWith = await proxies.sharingEgressIp(ip, name);
  // A shared IP is compared on every check: an unchanged result keeps its time until the heartbeat,
  // or `checkedAt` alone would rewrite the status on every check.
  const unchanged = before !== undefined && !changed && before.sharedWith.join() === sharedWith.join();
  const keep = unchanged && now - Date.parse(before.checkedAt) < heartbeatMs;
  const egress = { ip, checkedAt: keep ? before.checkedAt : new Date(now).toISOString(), sharedWith };
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
  const newlyShared = sharedWith.filter((n) => !before?.sharedWith.includes(n));
  return { status, ...(event ? { event } : {}), kick: newlyShared };
}
