/** The provider under test in the guarantee suites: its name, installation, placement, and what a name should end as. */
import type { ProxySpec } from '../../../shared/domain/proxy.js';

export const PROVIDER = 'subject';
export const INSTALLATION = 'it';

/** What a proxy name should end as. */
export type Expected = { exists: false } | { exists: true; spec: ProxySpec; labels: Record<string, string> };

/** The placement of variant 1, the world's own (its provider's catalogue entry `alt` says the same). */
let placement: Record<string, unknown> = {};

/** Set by `startWorld` for the provider under test; the suites run their worlds one after another. */
export function usePlacement(p: Record<string, unknown>): void {
  placement = p;
}

export function currentPlacement(): Record<string, unknown> {
  return placement;
}
