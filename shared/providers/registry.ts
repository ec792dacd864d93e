/** Builds the configured providers (instrumented) from a table of factories by type, and says why a name has none. */
import type { ProviderType } from '../config/schema.js';
import { ValidationError } from '../errors.js';
import { RELAY_KEYS_ENV } from '../wire/signature.js';
import type { Provider, Registry } from './contract.js';
import type { ProviderFactory, RegistryDeps } from './factory.js';
import { createGcpProvider } from './gcp/index.js';
import { instrument } from './instrument.js';
import { createKubernetesProvider } from './kubernetes/index.js';
import { createRelayedProvider } from './relayed/index.js';
import { createStaticProvider } from './static/index.js';

/**
 * One functions-side factory per provider type (relay-backed types get the relayed adapter; `static` hands out configured endpoints); a type
 * without one is reported as not included in this build.
 */
export const FACTORIES: Partial<Record<ProviderType, ProviderFactory>> = {
  process: createRelayedProvider,
  kvm: createRelayedProvider,
  gcp: createGcpProvider,
  kubernetes: createKubernetesProvider,
  static: createStaticProvider,
};

/**
 * @throws ValidationError naming the config field of a provider whose options are invalid
 */
export function createRegistry(deps: RegistryDeps): Registry {
  const providers = new Map<string, Provider>();
  const unavailable = new Map<string, string>();
  deps.config.providers.forEach((provider, index) => {
    const path = `config.providers.${index}`;
    const factory = FACTORIES[provider.type];
    if (!factory) {
      unavailable.set(
        provider.name,
        `provider "${provider.name}" has type "${provider.type}", which this build does not include`,
      );
      deps.logger.error('provider type not available', { provider: provider.name, type: provider.type });
      return;
    }
    if (provider.relay && deps.relayKeys && !deps.relayKeys.has(provider.relay)) {
      unavailable.set(
        provider.name,
        `provider "${provider.name}" is run by relay "${provider.relay}", which has no key in ${RELAY_KEYS_ENV}`,
      );
      deps.logger.error('relay has no key', { provider: provider.name, relay: provider.relay });
      return;
    }
    const seconds = (key: string, fallback: number) => {
      const value = Number(provider.options[key] ?? fallback);
      if (!(value > 0)) throw new ValidationError(`${path}.options.${key}`, 'must be a positive number of seconds');
      return value * 1000;
    };
    providers.set(provider.name, instrument(factory({ ...deps, provider, path, seconds }), deps.logger));
  });
  return {
    get: (name) => providers.get(name),
    missing: (name) => unavailable.get(name) ?? `provider "${name}" is not configured`,
    all: () => [...providers.values()],
  };
}
