/** What the relay needs from a backend: the provider contract plus credentials (for probes) and close. */
import type { Provider, ProviderHealth } from '../../shared/providers/contract.js';

/** Credentials a proxy instance requires; never log them. */
export interface ProxyCredentials {
  username: string;
  password: string;
}

/**
 * A backend the relay runs on behalf of a relay-backed provider (`process`, later `kvm`).
 * It follows every MUST rule of {@link Provider}.
 */
export interface RelayBackend extends Provider {
  /** The relay reports every backend's health in each report, so `check` is required here. */
  check(): Promise<ProviderHealth>;
  /**
   * The credentials an instance was created with, so the relay can probe through it.
   * @returns `undefined` when the instance is unknown
   */
  credentials(name: string): Promise<ProxyCredentials | undefined>;
  /** Waits for operations in flight and releases resources; instances keep running. */
  close(): Promise<void>;
}
