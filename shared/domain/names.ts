/** DNS-1123 labels (proxy and provider names) and the instance name derived from a proxy name. */
import { createHash } from 'node:crypto';
import { z } from 'zod';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** A DNS-1123 label: lowercase letters, digits and `-`, 1–63 characters, alphanumeric at both ends. */
export const dnsLabel = z
  .string()
  .min(1, 'must not be empty')
  .max(63, 'must be at most 63 characters (a DNS-1123 label)')
  .regex(
    DNS1123_LABEL,
    'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit',
  );

/** The label a pool puts on its members (README.md "Pools"). */
export const POOL_LABEL = 'egress.dev/pool';

/**
 * The backend instance name for a proxy: deterministic, so a duplicated create meets
 * AlreadyExists and adopts; unique per installation, so two installations in one project never
 * share a name; a valid DNS-1123 label starting with a letter (GCE requires it).
 *
 * @example instanceName('prod', 'eu-1') // 'ep-eu-1-3f2a9c1b'
 */
export function instanceName(installationId: string, proxyName: string): string {
  const digest = createHash('sha256').update(`${installationId}/${proxyName}`).digest('hex');
  const stem = proxyName.slice(0, 50).replace(/-+$/, '');
  return `ep-${stem}-${digest.slice(0, 8)}`;
}
