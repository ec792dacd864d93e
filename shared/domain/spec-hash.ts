/** The spec hash: over the spec *and* the resolved placement, so catalogue edits roll proxies. */
import { createHash } from 'node:crypto';
import type { ProxySpec } from './proxy.js';

/** JSON with object keys sorted, so equal values always hash the same. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * @param spec - the desired spec as requested
 * @param resolvedPlacement - the placement after catalogue resolution and provider defaults
 * @returns 16 hex characters (fits a GCE/Kubernetes label value)
 */
export function specHash(spec: ProxySpec, resolvedPlacement: Record<string, unknown>): string {
  const { maxAge: _rotation, ...instanceShaping } = spec;
  return createHash('sha256')
    .update(canonicalJson({ spec: instanceShaping, placement: resolvedPlacement }))
    .digest('hex')
    .slice(0, 16);
}
