/** The ProxyPool request on the wire (docs/architecture.md "Pools"): zod schemas and validation naming the field. */
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { dnsLabel, POOL_LABEL } from './names.js';
import { labelsSchema, metadataSchema, placementSchema, specSchema, toValidationError } from './proxy.js';
import { canonicalJson } from './spec-hash.js';
import { createHash } from 'node:crypto';
import { autoscaleSchema, MAX_REPLICAS } from './autoscale.js';

/** The label every member carries (reserved: only the pool controller sets it). */
export { POOL_LABEL } from './names.js';
/** A member name is `<pool>-<suffix>`: the suffix is this long, so a pool name leaves room for it. */
export const MEMBER_SUFFIX_LENGTH = 5;
export const MAX_POOL_NAME = 63 - 1 - MEMBER_SUFFIX_LENGTH;
export { MAX_REPLICAS } from './autoscale.js';

const poolName = dnsLabel.refine((n) => n.length <= MAX_POOL_NAME, {
  message: `must be at most ${MAX_POOL_NAME} characters (members are named <pool>-<${MEMBER_SUFFIX_LENGTH} characters>)`,
});

const count = (what: string) =>
  z
    .number({ error: `must be a number (${what})` })
    .int('must be an integer')
    .min(0, 'must be at least 0');

/** The highest tier: tiers are an order of preference, a handful deep. */
export const MAX_TIER = 15;

export const spreadEntrySchema = z.strictObject({
  provider: dnsLabel,
  placement: placementSchema.default({}),
  /** Fill order: members go to tier 0 first and overflow to the next tier up; absent: 0. */
  tier: count('the fill order, 0 first').max(MAX_TIER, `must be at most ${MAX_TIER}`).optional(),
  /** At most this many members on this entry; none: no cap. */
  maxReplicas: count('the most members on this entry').max(MAX_REPLICAS, `must be at most ${MAX_REPLICAS}`).optional(),
});
export type SpreadEntry = z.infer<typeof spreadEntrySchema>;

export const templateSchema = z.strictObject({
  metadata: z.strictObject({ labels: labelsSchema.default({}) }).default({ labels: {} }),
  spec: specSchema,
});
export type PoolTemplate = z.infer<typeof templateSchema>;

export const poolSpecSchema = z
  .strictObject({
    /** A fixed size; absent when `autoscale` sizes the pool (one of the two, never both). */
    replicas: count('how many members').max(MAX_REPLICAS, `must be at most ${MAX_REPLICAS}`).optional(),
    /** Sized by the gateways' demand (shared/pools/autoscale.ts), between its min and max. */
    autoscale: autoscaleSchema.optional(),
    /** Ready members kept while members are rotated, replaced or rolled; default: replicas. */
    minAvailable: count('Ready members kept during rotation').optional(),
    /** Members above `replicas` while replacements come up; default 1. */
    maxSurge: count('extra members during rotation').max(MAX_REPLICAS).default(1),
    template: templateSchema,
    spread: z.array(spreadEntrySchema).min(1, 'must name at least one entry when given').max(16).optional(),
    /** USD an hour the members may cost at most (shared/cost/pool-cost.ts): members beyond it are not placed. */
    maxCostPerHour: z.number({ error: 'must be a number (USD an hour)' }).positive('must be above 0').optional(),
  })
  .superRefine((spec, ctx) => {
    if (spec.replicas !== undefined && spec.autoscale)
      ctx.addIssue({
        code: 'custom',
        path: ['autoscale'],
        message: 'cannot be given with spec.replicas: an autoscaled pool is sized by demand (remove replicas)',
      });
    if (spec.replicas === undefined && !spec.autoscale)
      ctx.addIssue({ code: 'custom', path: ['replicas'], message: 'is required (or spec.autoscale)' });
    const most = spec.replicas ?? spec.autoscale?.maxReplicas ?? 0;
    if (spec.minAvailable !== undefined && spec.minAvailable > most)
      ctx.addIssue({
        code: 'custom',
        path: ['minAvailable'],
        message:
          spec.replicas !== undefined
            ? `must be at most spec.replicas (${spec.replicas})`
            : `must be at most spec.autoscale.maxReplicas (${most})`,
      });
    // An entry is its provider and placement: the same one twice at two tiers is one entry.
    const keys = (spec.spread ?? []).map(entryKey);
    const dup = keys.findIndex((k, i) => keys.indexOf(k) !== i);
    if (dup >= 0) ctx.addIssue({ code: 'custom', path: ['spread', dup], message: 'repeats an earlier entry' });
    if (POOL_LABEL in spec.template.metadata.labels)
      ctx.addIssue({
        code: 'custom',
        path: ['template', 'metadata', 'labels', POOL_LABEL],
        message: 'is set by the pool on its members',
      });
  });
export type PoolSpec = z.infer<typeof poolSpecSchema>;

const envelope = {
  apiVersion: z.literal('egress.dev/v1', { error: 'must be "egress.dev/v1"' }),
  kind: z.literal('ProxyPool', { error: 'must be "ProxyPool"' }),
};

export const poolApplySchema = z.strictObject({
  ...envelope,
  action: z.literal('apply'),
  metadata: metadataSchema.extend({ name: poolName }),
  spec: poolSpecSchema,
});
export const poolDeleteSchema = z.strictObject({
  ...envelope,
  action: z.literal('delete'),
  metadata: z.strictObject({ name: poolName, labels: labelsSchema.optional() }),
  spec: z.unknown().optional(),
});
export type PoolApplyRequest = z.infer<typeof poolApplySchema>;
export type PoolDeleteRequest = z.infer<typeof poolDeleteSchema>;
export type PoolRequest = PoolApplyRequest | PoolDeleteRequest;

/** Whether a decoded request says `kind: ProxyPool` (the request handler routes on it). */
export function isPoolRequest(input: unknown): boolean {
  return typeof input === 'object' && input !== null && (input as { kind?: unknown }).kind === 'ProxyPool';
}

/**
 * Validates one pool request (already JSON-decoded). Provider names in `spread` and the template
 * are checked against the configuration by {@link checkPoolProviders}, where it is known.
 *
 * @throws ValidationError naming the field and the reason
 */
export function parsePoolRequest(input: unknown): PoolRequest {
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw new ValidationError('(message)', 'must be a JSON object');
  const action = (input as { action?: unknown }).action;
  const schema = action === 'apply' ? poolApplySchema : action === 'delete' ? poolDeleteSchema : undefined;
  if (!schema) throw new ValidationError('action', 'must be "apply" or "delete"');
  const parsed = schema.safeParse(input);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

/** The entries members are spread over: `spread`, or the template's own provider and placement. */
export function spreadOf(spec: PoolSpec): SpreadEntry[] {
  return spec.spread ?? [{ provider: spec.template.spec.provider, placement: spec.template.spec.placement }];
}

/**
 * Refuses a pool naming a provider that is not configured (in `spread`, or the template's when
 * there is no spread).
 *
 * @throws ValidationError on `spec.spread[i].provider` or `spec.template.spec.provider`
 */
export function checkPoolProviders(spec: PoolSpec, configured: readonly string[]): void {
  const known = `configured: ${configured.join(', ') || 'none'}`;
  if (!spec.spread) {
    if (!configured.includes(spec.template.spec.provider))
      throw new ValidationError(
        'spec.template.spec.provider',
        `names no configured provider: "${spec.template.spec.provider}" (${known})`,
      );
    return;
  }
  spec.spread.forEach((entry, i) => {
    if (!configured.includes(entry.provider))
      throw new ValidationError(
        `spec.spread.${i}.provider`,
        `names no configured provider: "${entry.provider}" (${known})`,
      );
  });
}

/** Identifies a spread entry (provider and placement), stable across reorderings of `spread`. */
export function entryKey(entry: { provider: string; placement: Record<string, unknown> }): string {
  return canonicalJson({ provider: entry.provider, placement: entry.placement });
}

/** The hash of what a member is made from (its template); a member with another hash is rolled. */
export function templateHash(template: PoolTemplate): string {
  return createHash('sha256').update(canonicalJson(template)).digest('hex').slice(0, 16);
}

/** The spec of a member on `entry`: the template's spec with the entry's provider and placement. */
export function memberSpec(template: PoolTemplate, entry: SpreadEntry) {
  // Placement is provider-specific: the template's applies only to its own provider's entries.
  const base = entry.provider === template.spec.provider ? template.spec.placement : {};
  return { ...template.spec, provider: entry.provider, placement: { ...base, ...entry.placement } };
}
