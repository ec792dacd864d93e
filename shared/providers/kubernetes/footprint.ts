/** What one kubernetes proxy is billed for: nothing of its own; its Pod's requests take room on the cluster's nodes. */
import type { ProviderConfig } from '../../config/schema.js';
import type { PodFootprint } from '../../domain/footprint.js';
import { parseKubernetesOptions } from './options.js';

/**
 * @param provider - the configured provider
 * @param path - the provider's config path (`config.providers.0`)
 * @throws ValidationError naming the option that is invalid
 */
export function kubernetesFootprint(provider: ProviderConfig, path: string): PodFootprint {
  const options = parseKubernetesOptions(provider.options, path);
  return { kind: 'pod', requests: { ...options.resources.requests } };
}
