/** What one gcp proxy occupies: its machine type in its zone, one in-use external IPv4, its boot disk, its network, tags and port. */
import type { ProviderConfig } from '../../config/schema.js';
import type { VmFootprint } from '../../domain/footprint.js';
import { parseGcpOptions, regionOf, resolveGcpPlacement } from './options.js';

/**
 * @param provider - the configured provider
 * @param placement - the request's placement, its catalogue reference already expanded
 * @param path - the provider's config path (`config.providers.0`)
 * @throws ValidationError naming the option or placement field that is invalid
 */
export function gcpFootprint(provider: ProviderConfig, placement: Record<string, unknown>, path: string): VmFootprint {
  const options = parseGcpOptions(provider.options, path);
  const resolved = resolveGcpPlacement(placement, options);
  const from = (key: 'zone' | 'machineType') => (key in placement ? `spec.placement.${key}` : `${path}.options.${key}`);
  return {
    kind: 'vm',
    project: options.project,
    zone: resolved.zone,
    region: regionOf(resolved.zone),
    machineType: resolved.machineType,
    spot: resolved.spot,
    // resources.ts gives every VM one ONE_TO_ONE_NAT access config: one in-use external IPv4.
    externalIpv4: 1,
    // resources.ts names no diskType: Compute makes the boot disk pd-standard.
    bootDisk: { type: 'pd-standard', gib: resolved.diskSizeGb },
    network: resolved.network,
    subnetwork: resolved.subnetwork,
    tags: resolved.tags,
    port: options.proxyPort,
    fields: { zone: from('zone'), machineType: from('machineType') },
  };
}
