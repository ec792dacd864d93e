/** What the relay needs from a backend: the provider contract plus credentials (for probes) and close. */
import { toValidationError } from '../../shared/domain/proxy.js';
import { PermanentError, ValidationError } from '../../shared/errors.js';
import {
  instanceSpecSchema,
  type Credentials,
  type InstanceSpec,
  type Provider,
  type ProviderHealth,
} from '../../shared/providers/contract.js';

/**
 * A backend the relay runs on behalf of a relay-backed provider (`process`, `kvm`).
 * It follows every MUST rule of {@link Provider}.
 */
export interface RelayBackend extends Provider {
  /** The relay reports every backend's health in each report, so `check` is required here. */
  check(): Promise<ProviderHealth>;
  /**
   * The credentials an instance was created with, so the relay can probe through it.
   * @returns `undefined` when the instance is unknown
   */
  credentials(name: string): Promise<Credentials | undefined>;
  /** Waits for operations in flight and releases resources; instances keep running. */
  close(): Promise<void>;
  /**
   * How long after an instance's `createdAt` probe failures are not reported while it never
   * answered yet (an instance that installs its proxy after boot); 0 or absent: none.
   */
  readonly startupGraceMs?: number;
}

/**
 * Validates a create's spec and resolves its placement, as every backend's `create` starts.
 * @throws PermanentError naming the field (`spec.port`, `spec.placement.host`)
 */
export function parseCreateSpec(
  input: InstanceSpec,
  resolvePlacement: (placement: Record<string, unknown>) => Record<string, unknown>,
): { spec: InstanceSpec; placement: Record<string, unknown> } {
  const parsed = instanceSpecSchema.safeParse(input);
  if (!parsed.success) {
    const invalid = toValidationError(parsed.error, 'spec');
    throw new PermanentError(invalid.reason, invalid.field);
  }
  try {
    return { spec: parsed.data, placement: resolvePlacement(parsed.data.placement) };
  } catch (err) {
    if (err instanceof ValidationError) throw new PermanentError(err.reason, err.field, { cause: err });
    throw err;
  }
}
