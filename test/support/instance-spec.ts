/** A fresh InstanceSpec for provider tests: a unique proxy name, a random spec hash and password. */
import { randomBytes } from 'node:crypto';
import type { InstanceSpec } from '../../shared/providers/contract.js';

let n = 0;

/**
 * @param prefix - the proxy name's prefix (`gp` → `gp-<time>-<n>`, instance `ep-gp-…`)
 */
export function instanceSpec(
  prefix: string,
  placement: Record<string, unknown> = {},
  over: Partial<InstanceSpec> = {},
): InstanceSpec {
  const proxy = `${prefix}-${Date.now().toString(36)}-${n++}`;
  return {
    name: `ep-${proxy}`,
    proxy,
    installationId: 'it',
    specHash: randomBytes(8).toString('hex'),
    port: 0,
    placement,
    credentials: { username: `u-${prefix}`, password: randomBytes(18).toString('base64url') },
    ...over,
  };
}
