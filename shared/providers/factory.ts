/**
 * What a provider factory receives and the shape every provider folder exports
 * (`createXProvider(deps): Provider`), apart from the registry that imports them all.
 */
import type { Bus } from '../bus/pubsub.js';
import type { Config, ProviderConfig } from '../config/schema.js';
import type { Logger } from '../logger.js';
import type { RelayKeyring } from '../wire/signature.js';
import type { Provider } from './contract.js';
import type { RelayRepository, StaticClaimRepository } from '../store/ports.js';

/** The shared clients the registry is built from (shared/runtime.ts). */
export interface RegistryDeps {
  config: Config;
  relays: RelayRepository;
  bus: Bus;
  logger: Logger;
  /** The clock of providers that keep time (relay-backed, gcp, kubernetes); default `Date.now`. */
  now?: () => number;
  /** When set, commands to a relay are signed with its first key (shared/wire/signature.ts). */
  relayKeys?: RelayKeyring | undefined;
  /** The `static` provider's endpoint claims; a static provider is not built without it. */
  claims?: StaticClaimRepository | undefined;
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
 * A provider factory, `createXProvider(deps)`: each takes the part of {@link ProviderFactoryDeps}
 * it uses (plus optional test seams). It must be cheap: SDKs are loaded lazily on the first call, so
 * a function only pays for the provider types it actually uses.
 */
export type ProviderFactory = (deps: ProviderFactoryDeps) => Provider;
