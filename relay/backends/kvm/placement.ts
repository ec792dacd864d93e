/** Placement of a kvm instance: which host, and which configured size. */
import { ValidationError } from '../../../shared/errors.js';
import type { KvmBackendConfig } from './options.js';

/**
 * Placement keys: `host` (required when the provider has several) and `size` (a configured size).
 *
 * @returns the placement with the host filled in
 * @throws ValidationError naming `spec.placement.<key>` and the reason
 */
export function resolveKvmPlacement(
  config: KvmBackendConfig,
  placement: Record<string, unknown>,
): Record<string, unknown> {
  for (const key of Object.keys(placement)) {
    if (key !== 'host' && key !== 'size')
      throw new ValidationError(`spec.placement.${key}`, 'unknown key for a kvm provider (allowed: host, size)');
  }
  const hosts = Object.keys(config.hosts);
  const host = placement['host'] ?? (hosts.length === 1 ? hosts[0] : undefined);
  if (host === undefined)
    throw new ValidationError('spec.placement.host', `required: this provider has several hosts (${hosts.join(', ')})`);
  if (typeof host !== 'string' || !hosts.includes(host))
    throw new ValidationError(
      'spec.placement.host',
      `${JSON.stringify(host)} is not a host of this provider (known: ${hosts.join(', ')})`,
    );
  const size = placement['size'];
  if (size === undefined) return { host };
  const sizes = Object.keys(config.sizes);
  if (typeof size !== 'string' || !sizes.includes(size))
    throw new ValidationError(
      'spec.placement.size',
      `${JSON.stringify(size)} is not a size of this provider (known: ${sizes.join(', ') || 'none'})`,
    );
  return { host, size };
}
