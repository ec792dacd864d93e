/** Builds the relay's backends from its configuration, one per provider, by type. */
import type { Logger } from '../../shared/logger.js';
import type { RelayConfig } from '../config.js';
import type { RelayBackend } from './backend.js';
import { createKvmBackend } from './kvm/index.js';
import { createProcessBackend } from './process/index.js';

/** What backends need besides their configuration. */
export interface BackendDeps {
  logger: Logger;
}

/** @returns the backends keyed by provider name */
export function createBackends(config: RelayConfig, deps: BackendDeps): Map<string, RelayBackend> {
  const backends = new Map<string, RelayBackend>();
  for (const backend of config.backends) {
    switch (backend.type) {
      case 'process':
        backends.set(
          backend.provider,
          createProcessBackend({ ...backend, installationId: config.installationId, logger: deps.logger }),
        );
        break;
      case 'kvm':
        backends.set(
          backend.provider,
          createKvmBackend({ config: backend, installationId: config.installationId, logger: deps.logger }),
        );
        break;
    }
  }
  return backends;
}
