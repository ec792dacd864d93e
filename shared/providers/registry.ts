/** Builds the configured providers (instrumented) from a table of factories by type, and says why a name has none. */
import type { Bus } from '../bus/pubsub.js';
import type { Config, ProviderConfig, ProviderType } from '../config/schema.js';
import { ValidationError } from '../errors.js';
import type { Logger } from '../logger.js';
import { RELAY_KEYS_ENV, type RelayKeyring } from '../relay/signature.js';
import type { RelayStore } from '../store/relays.js';
import type { Provider } from './contract.js';
import { gcpProviderFactory } from './gcp/index.js';
import { instrument } from './instrument.js';
import { createKubernetesProvider } from './kubernetes/index.js';
import { createRelayProvider } from './relay/index.js';

export interface RegistryDeps {
  config: Config;
  relays: RelayStore;
  bus: Bus;
  logger: Logger;
  /** The clock of providers that keep time (the relay-backed ones); default `Date.now`. */
  now?: () => number;
  /** When set, commands to a relay are signed with its first key (shared/relay/signature.ts). */
  relayKeys?: RelayKeyring | undefined;
}

/** What a provider factory receives: its own config entry and the shared clients. */
export interface ProviderFactoryDeps extends RegistryDeps {
  provider: ProviderConfig;
  /** The config path of this provider (`config.providers.2`), for errors naming a field. */
  path: string;
  /** Reads a positive number of seconds from `provider.options` (in milliseconds). */
  seconds(key: string, fallback: number): number;
}

/**
 * A provider factory. It must be cheap: SDKs are loaded lazily on the first call, so a function
 * only pays for the provider types it actually uses.
 */
export type ProviderFactory = (deps: ProviderFactoryDeps) => Provider;

export interface Registry {
  /** The provider configured under `name`, or undefined. */
  get(name: string): Provider | undefined;
  /** Why `name` has no provider (for the ProviderNotConfigured condition). */
  missing(name: string): string;
  all(): Provider[];
}

/** Relays report every few seconds locally and every 30 s in production; three missed reports is down. */
const HEARTBEAT_TIMEOUT_MS = 120_000;

const relayBacked: ProviderFactory = (d) =>
  createRelayProvider({
    config: d.provider,
    installationId: d.config.installationId,
    relays: d.relays,
    bus: d.bus,
    heartbeatTimeoutMs: d.seconds('heartbeatTimeoutSeconds', HEARTBEAT_TIMEOUT_MS / 1000),
    resendAfterMs: d.seconds('commandResendSeconds', 60),
    sendingMs: d.config.leaseSeconds * 1000,
    signingKey: d.provider.relay ? d.relayKeys?.get(d.provider.relay)?.[0] : undefined,
    ...(d.now && { now: d.now }),
  });

/** One factory per provider type; a type without one is reported as not included in this build. */
const FACTORIES: Partial<Record<ProviderType, ProviderFactory>> = {
  process: relayBacked,
  kvm: relayBacked,
  gcp: gcpProviderFactory,
  kubernetes: createKubernetesProvider,
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
