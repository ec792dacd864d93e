/** The billable resources of one proxy, by provider type: the cost estimate's table beside the registry's. */
import type { ProviderConfig, ProviderType } from '../config/schema.js';
import { expandCatalogue } from '../config/catalogue.js';
import type { Billable } from '../cost/billable.js';
import { gcpBillable } from './gcp/billable.js';
import { kubernetesBillable } from './kubernetes/billable.js';

const BILLABLES: Record<
  ProviderType,
  (provider: ProviderConfig, placement: Record<string, unknown>, path: string) => Billable
> = {
  gcp: gcpBillable,
  kubernetes: (provider, _placement, path) => kubernetesBillable(provider, path),
  // A relay's host and its guests are the user's own hardware.
  process: () => ({ kind: 'on-prem' }),
  kvm: () => ({ kind: 'on-prem' }),
};

/**
 * @param provider - the configured provider
 * @param placement - the request's `spec.placement` (a catalogue reference is expanded here)
 * @param path - the provider's config path, named in errors
 * @throws ValidationError naming the field that is invalid
 */
export function billableOf(provider: ProviderConfig, placement: Record<string, unknown>, path: string): Billable {
  return BILLABLES[provider.type](provider, expandCatalogue(provider, placement), path);
}
