/** Builds the configured providers (instrumented) and says why a name has none. */
import type { Bus } from '../bus/pubsub.js';
import { RELAY_TYPES, type Config } from '../config/schema.js';
import { ValidationError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { RelayStore } from '../store/relays.js';
import type { Provider } from './contract.js';
import { instrument } from './instrument.js';
import { createRelayProvider } from './relay/index.js';

export interface RegistryDeps {
  config: Config;
  relays: RelayStore;
  bus: Bus;
  logger: Logger;
}

export interface Registry {
  /** The provider configured under `name`, or undefined. */
  get(name: string): Provider | undefined;
  /** Why `name` has no provider (for the ProviderNotConfigured condition). */
  missing(name: string): string;
  all(): Provider[];
}

/** Relays report every few seconds locally and every 30 s in production; three missed reports is down. */
const HEARTBEAT_TIMEOUT_MS = 120_000;

export function createRegistry(deps: RegistryDeps): Registry {
  const providers = new Map<string, Provider>();
  const unavailable = new Map<string, string>();
  for (const config of deps.config.providers) {
    if (RELAY_TYPES.includes(config.type)) {
      const seconds = (key: string, fallback: number) => {
        const value = Number(config.options[key] ?? fallback);
        if (!(value > 0)) {
          const field = `config.providers.${deps.config.providers.indexOf(config)}.options.${key}`;
          throw new ValidationError(field, 'must be a positive number of seconds');
        }
        return value * 1000;
      };
      const timeout = seconds('heartbeatTimeoutSeconds', HEARTBEAT_TIMEOUT_MS / 1000);
      const resendAfterMs = seconds('commandResendSeconds', 60);
      providers.set(
        config.name,
        instrument(
          createRelayProvider({
            config,
            installationId: deps.config.installationId,
            relays: deps.relays,
            bus: deps.bus,
            heartbeatTimeoutMs: timeout,
            resendAfterMs,
          }),
          deps.logger,
        ),
      );
    } else {
      unavailable.set(
        config.name,
        `provider "${config.name}" has type "${config.type}", which this build does not include yet`,
      );
      deps.logger.error('provider type not available', { provider: config.name, type: config.type });
    }
  }
  return {
    get: (name) => providers.get(name),
    missing: (name) => unavailable.get(name) ?? `provider "${name}" is not configured`,
    all: () => [...providers.values()],
  };
}
