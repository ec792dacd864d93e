/** What one gcp proxy is billed for: its machine type in its region, one in-use external IPv4, its boot disk. */
import type { ProviderConfig } from '../../config/schema.js';
import type { VmBillable } from '../../cost/billable.js';
import { parseGcpOptions, regionOf, resolveGcpPlacement } from './options.js';

/**
 * @param provider - the configured provider
 * @param placement - the request's placement, its catalogue reference already expanded
 * @param path - the provider's config path (`config.providers.0`)
 * @throws ValidationError naming the option or placement field that is invalid
 */
export function gcpBillable(provider: ProviderConfig, placement: Record<string, unknown>, path: string): VmBillable {
  const options = parseGcpOptions(provider.options, path);
  const resolved = resolveGcpPlacement(placement, options);
  const from = (key: 'zone' | 'machineType') => (key in placement ? `spec.placement.${key}` : `${path}.options.${key}`);
  return {
    kind: 'vm',
    region: regionOf(resolved.zone),
    machineType: resolved.machineType,
    spot: resolved.spot,
    // resources.ts gives every VM one ONE_TO_ONE_NAT access config: one in-use external IPv4.
    externalIpv4: 1,
    // resources.ts names no diskType: Compute makes the boot disk pd-standard.
    bootDisk: { type: 'pd-standard', gib: resolved.diskSizeGb },
    fields: { zone: from('zone'), machineType: from('machineType') },
  };
}
