/** A placement's `catalogue` reference replaced by the provider's named entry, the request's own keys winning. */
import { ValidationError } from '../errors.js';
import type { ProviderConfig } from './schema.js';

/**
 * @param provider - the configured provider the placement is for
 * @param placement - `spec.placement` as the request gives it
 * @returns the placement without `catalogue`, the entry's keys under the request's
 * @throws ValidationError on `spec.placement.catalogue` for an entry the provider does not have
 */
export function expandCatalogue(
  provider: Pick<ProviderConfig, 'name' | 'catalogue'>,
  placement: Record<string, unknown>,
): Record<string, unknown> {
  const { catalogue, ...rest } = placement;
  if (catalogue === undefined) return rest;
  const entries = provider.catalogue;
  const entry = typeof catalogue === 'string' ? entries[catalogue] : undefined;
  if (!entry)
    throw new ValidationError(
      'spec.placement.catalogue',
      `unknown catalogue entry ${JSON.stringify(catalogue)} for provider "${provider.name}" (known: ${Object.keys(entries).join(', ') || 'none'})`,
    );
  return { ...entry, ...rest };
}
