/** What one `static` proxy is billed: the highest `hourlyUsd` among the endpoints its placement selects (it may claim any). */
import type { ProviderConfig } from '../../config/schema.js';
import type { OnPremFootprint } from '../../domain/footprint.js';
import { parseStaticOptions, parseStaticPlacement, selects } from './options.js';

/**
 * @param path - the provider's config path (`config.providers.0`)
 * @throws ValidationError naming the option or placement field that is invalid
 */
export function staticFootprint(
  provider: ProviderConfig,
  placement: Record<string, unknown>,
  path: string,
): OnPremFootprint {
  const { endpoints } = parseStaticOptions(provider.options, path);
  const p = parseStaticPlacement(placement, endpoints);
  const prices = endpoints
    .filter((e) => selects(p, e))
    .flatMap((e) => (e.hourlyUsd === undefined ? [] : [e.hourlyUsd]));
  return { kind: 'on-prem', ...(prices.length > 0 && { hourlyUsd: Math.max(...prices) }) };
}
