/** The footprint resources of one proxy, by provider type: the cost estimate's table beside the registry's. */
import type { ProviderConfig, ProviderType } from '../config/schema.js';
import { expandCatalogue } from '../config/catalogue.js';
import type { Footprint } from '../domain/footprint.js';
import { gcpFootprint } from './gcp/footprint.js';
import { kubernetesFootprint } from './kubernetes/footprint.js';
import { staticFootprint } from './static/footprint.js';

const FOOTPRINTS: Record<
  ProviderType,
  (provider: ProviderConfig, placement: Record<string, unknown>, path: string) => Footprint
> = {
  gcp: gcpFootprint,
  kubernetes: (provider, _placement, path) => kubernetesFootprint(provider, path),
  // A relay's host and its guests are the user's own hardware.
  process: () => ({ kind: 'on-prem' }),
  kvm: () => ({ kind: 'on-prem' }),
  // A static endpoint is a vendor's server or yours: its price, if any, is in its config entry.
  static: staticFootprint,
};

/**
 * @param provider - the configured provider
 * @param placement - the request's `spec.placement` (a catalogue reference is expanded here)
 * @param path - the provider's config path, named in errors
 * @throws ValidationError naming the field that is invalid
 */
export function footprintOf(provider: ProviderConfig, placement: Record<string, unknown>, path: string): Footprint {
  return FOOTPRINTS[provider.type](provider, expandCatalogue(provider, placement), path);
}
