/**
 * Egress location (docs/architecture.md "Egress location"): the probed egress IP's country and AS on
 * `status.health`, and the `EgressVerified` condition comparing that country with the one the
 * provider expects for the placement. False keeps the proxy out of strict-country discovery.
 */
import type { Condition, ProxyStatus } from '../domain/status.js';
import { mergeConditions } from '../reconcile/status.js';
import type { EgressLocation, EgressLocator } from './database.js';

type Verdict = Pick<Condition, 'status' | 'reason' | 'message'>;

/** The condition for an egress at `ip` located at `where`, against the country expected. */
export function egressVerdict(ip: string, where: EgressLocation, expected: string): Verdict {
  const { country } = where;
  if (country === undefined)
    return {
      status: 'Unknown',
      reason: 'NotLocated',
      message: `egress ${ip} is not in the location database; the placement expects ${expected}`,
    };
  if (country !== expected)
    return {
      status: 'False',
      reason: 'CountryMismatch',
      message: `egress ${ip} is in ${country}; the placement expects ${expected}`,
    };
  return {
    status: 'True',
    reason: 'CountryMatches',
    message: `egress ${ip} is in ${country}, as the placement expects`,
  };
}

/**
 * The status with the egress located: `health.country`, `health.asn` and `health.asnOrg` (only the
 * ones the database knows: Firestore refuses undefined) and `EgressVerified` when the provider
 * states a country (none otherwise: nothing to verify against). A status whose probe saw no egress
 * IP is returned as it is (the last verdict stands until a probe sees one).
 *
 * @param expected - the provider's country for the placement (`Provider.expectedCountry`)
 */
export function locateEgress(
  status: ProxyStatus,
  locator: EgressLocator,
  expected: string | undefined,
  now: number,
): ProxyStatus {
  const health = status.health;
  const ip = health?.egressIp;
  if (!health || !ip) return status;
  const where = locator.locate(ip);
  const { country: _c, asn: _a, asnOrg: _o, ...rest } = health;
  const located = {
    ...rest,
    ...(where.country !== undefined ? { country: where.country } : {}),
    ...(where.asn !== undefined ? { asn: where.asn } : {}),
    ...(where.asnOrg !== undefined ? { asnOrg: where.asnOrg } : {}),
  };
  const conditions =
    expected === undefined
      ? status.conditions.filter((c) => c.type !== 'EgressVerified')
      : mergeConditions(status.conditions, { EgressVerified: egressVerdict(ip, where, expected) }, now);
  return { ...status, health: located, conditions };
}

/** Whether discovery's strict country filter admits the proxy: located in `country`, and not flagged. */
export function inCountry(status: ProxyStatus, country: string): boolean {
  const verified = status.conditions.find((c) => c.type === 'EgressVerified');
  return status.health?.country === country && verified?.status !== 'False';
}
