/**
 * The provider kits, one per product provider type (`shared/config/schema.ts#PROVIDER_TYPES`): the
 * one place the tests name the types. A type added to the product without a kit here (or a kit
 * under another type's key) fails the typecheck; the contract, the guarantee suites and the
 * provider e2e spec iterate this.
 */
import type { ProviderType } from '../../shared/config/schema.js';
import { gcpKit } from './gcp.js';
import type { Absent, GuaranteeKit, ProviderKit } from './kit.js';
import { kubernetesKit } from './kubernetes.js';
import { kvmKit } from './kvm.js';
import { processKit } from './process.js';
import { staticKit } from './static.js';

export const KITS = {
  process: processKit,
  kvm: kvmKit,
  gcp: gcpKit,
  kubernetes: kubernetesKit,
  static: staticKit,
} as const satisfies { [T in ProviderType]: ProviderKit & { type: T } };

/** The kits in the registry's order. */
export const KIT_LIST: readonly ProviderKit[] = Object.values(KITS);

/** A facet a kit serves (not {@link Absent}). */
export const serves = <T extends object>(facet: T | Absent): facet is T => !('absent' in facet);

/** The provider types with a guarantee world. */
export type ProviderKind = {
  [K in keyof typeof KITS]: (typeof KITS)[K]['guarantees'] extends GuaranteeKit ? K : never;
}[keyof typeof KITS];

export const PROVIDER_KINDS = KIT_LIST.filter((k) => serves(k.guarantees)).map((k) => k.type as ProviderKind);

/** The guarantee world of `kind`. */
export const guaranteeKit = (kind: ProviderKind): GuaranteeKit => KITS[kind].guarantees;

/**
 * The providers a suite runs against: `GUARANTEE_PROVIDERS` (comma-separated, or `all`) when set,
 * else the suite's `defaults` (every provider with a world, unless the suite says why not).
 */
export function providersUnderTest(defaults: readonly ProviderKind[] = PROVIDER_KINDS): ProviderKind[] {
  const given = process.env['GUARANTEE_PROVIDERS'];
  if (!given) return [...defaults];
  if (given === 'all') return [...PROVIDER_KINDS];
  const kinds = given.split(',').map((k) => k.trim());
  for (const k of kinds)
    if (!(PROVIDER_KINDS as readonly string[]).includes(k))
      throw new Error(`GUARANTEE_PROVIDERS: "${k}" is not one of ${PROVIDER_KINDS.join(', ')}`);
  return kinds as ProviderKind[];
}
