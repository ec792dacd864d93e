/** Instances no proxy document owns (GC's work), created straight through a provider. */
import { instanceName } from '../../../shared/domain/names.js';
import type { InstanceSpec } from '../../../shared/providers/contract.js';

/** The spec of an orphan of `installation` for a proxy name no document has. */
export function orphanSpec(installation: string, proxy: string): InstanceSpec {
  return {
    name: instanceName(installation, proxy),
    proxy,
    installationId: installation,
    specHash: 'orphan0',
    port: 0,
    placement: {},
    credentials: { username: 'u', password: 'orphan-password-0123' },
  };
}
