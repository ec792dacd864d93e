/**
 * A pool's running cost an hour: each live member's instance at the dated catalogue's prices (a
 * VM's machine, in-use IPv4 and boot disk) or at the price its config states (a static
 * endpoint's `hourlyUsd`), and the pool's share of the control plane.
 */
import type { Config, ProviderConfig } from '../config/schema.js';
import { RELAY_TYPES } from '../config/schema.js';
import type { PoolCost } from '../domain/pool-status.js';
import { asEgressError } from '../errors.js';
import { footprintOf } from '../providers/footprint.js';
import { type Catalogue, CATALOGUE, vmRates } from './catalogue.js';
import { controlPlaneMonthly } from './control-plane.js';

/** One member's price: what it is, and USD an hour (undefined: not priced, `what` says why). */
export interface MemberPrice {
  what: string;
  hourlyUsd: number | undefined;
}

/**
 * The hourly price of one member on a spread entry (provider and placement).
 *
 * @returns the price, or undefined `hourlyUsd` with the reason in `what`; never throws
 */
export function memberPrice(
  providers: readonly ProviderConfig[],
  entry: { provider: string; placement: Record<string, unknown> },
  catalogue: Catalogue = CATALOGUE,
): MemberPrice {
  const index = providers.findIndex((p) => p.name === entry.provider);
  const provider = providers[index];
  if (!provider) return { what: `${entry.provider} (not configured)`, hourlyUsd: undefined };
  try {
    const f = footprintOf(provider, entry.placement, `config.providers.${index}`);
    if (f.kind === 'pod')
      return { what: `${provider.name}: Pods (billed as the cluster's nodes)`, hourlyUsd: undefined };
    if (f.kind === 'on-prem')
      return f.hourlyUsd === undefined
        ? { what: `${provider.name}: ${provider.type} (no price configured)`, hourlyUsd: undefined }
        : { what: `${provider.name}: ${provider.type} endpoint`, hourlyUsd: f.hourlyUsd };
    const rates = vmRates(catalogue, f);
    const disk = (f.bootDisk.gib * rates.diskGibMonth) / catalogue.hoursPerMonth;
    return {
      what: `${provider.name}: VM ${f.machineType} ${f.spot ? 'Spot' : 'on-demand'}, ${f.region} (+ IPv4, disk)`,
      hourlyUsd: rates.machineHourly + f.externalIpv4 * rates.ipv4Hourly + disk,
    };
  } catch (err) {
    return { what: `${provider.name}: ${asEgressError(err).message}`, hourlyUsd: undefined };
  }
}

/**
 * What one GiB through the pool costs in Internet egress: the catalogue's first-tier rate for the
 * share of its live members that are cloud VMs (traffic taken as spread evenly over the members;
 * a static endpoint, a local process or a Pod pays no egress to Google here).
 */
export function egressPerGib(
  providers: readonly ProviderConfig[],
  members: readonly { provider: string; placement: Record<string, unknown> }[],
  catalogue: Catalogue = CATALOGUE,
): number {
  if (members.length === 0) return 0;
  const vms = members.filter((m) => {
    const index = providers.findIndex((p) => p.name === m.provider);
    const provider = providers[index];
    if (!provider) return false;
    try {
      return footprintOf(provider, m.placement, `config.providers.${index}`).kind === 'vm';
    } catch {
      return false;
    }
  }).length;
  return ((catalogue.internetEgress.tiers[0]?.perGib ?? 0) * vms) / members.length;
}

/**
 * @param members - the pool's live members' provider and placement
 * @returns the lines by kind of member, the control plane's share, what is not priced, the total
 */
export function poolCost(
  config: Pick<Config, 'providers' | 'checkIntervalSeconds'>,
  members: readonly { provider: string; placement: Record<string, unknown> }[],
  catalogue: Catalogue = CATALOGUE,
): PoolCost {
  const lines = new Map<string, { members: number; perHourUsd: number }>();
  const unpriced = new Map<string, number>();
  let relayed = 0;
  for (const m of members) {
    const type = config.providers.find((p) => p.name === m.provider)?.type;
    if (type && RELAY_TYPES.includes(type)) relayed++;
    const price = memberPrice(config.providers, m, catalogue);
    if (price.hourlyUsd === undefined) {
      unpriced.set(price.what, (unpriced.get(price.what) ?? 0) + 1);
      continue;
    }
    const line = lines.get(price.what) ?? { members: 0, perHourUsd: 0 };
    lines.set(price.what, { members: line.members + 1, perHourUsd: line.perHourUsd + price.hourlyUsd });
  }
  const controlPlane =
    controlPlaneMonthly(members.length - relayed, relayed, config.checkIntervalSeconds) / catalogue.hoursPerMonth;
  const all = [
    ...[...lines].map(([what, l]) => ({ what, ...l })),
    ...(members.length > 0
      ? [{ what: 'control plane (share)', members: members.length, perHourUsd: controlPlane }]
      : []),
  ];
  return {
    perHourUsd: all.reduce((s, l) => s + l.perHourUsd, 0),
    lines: all,
    unpriced: [...unpriced].map(([what, n]) => `${n} × ${what}`),
    pricesOf: catalogue.recordedOn,
  };
}
