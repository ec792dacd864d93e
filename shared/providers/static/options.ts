/**
 * The `static` provider's options: the endpoints it hands out (a vendor's host:port with
 * per-session usernames, or servers you run), and the placement keys that select among them.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../../errors.js';
import { countryCodeSchema } from '../../domain/country.js';
import { labelsSchema, toValidationError } from '../../domain/proxy.js';

export const staticEndpointSchema = z.strictObject({
  host: z.string().min(1, 'must name the host (a name or an address)'),
  port: z.number().int().min(1).max(65535),
  /** Basic credentials the endpoint requires (a vendor's per-session username); none: an open or allow-listed endpoint. */
  username: z.string().min(1).optional(),
  password: z.string().optional(),
  /** Where the endpoint leaves from: `spec.placement.country` selects by it, and the egress check compares it. */
  country: countryCodeSchema.optional(),
  /** Selected by `spec.placement.labels`. */
  labels: labelsSchema.default({}),
  /** USD an hour this endpoint costs while claimed (the vendor's price); none: not priced. */
  hourlyUsd: z.number().nonnegative().optional(),
});
export type StaticEndpoint = z.infer<typeof staticEndpointSchema>;

export const staticOptionsSchema = z.strictObject({
  endpoints: z
    .array(staticEndpointSchema)
    .min(1, 'must list at least one endpoint')
    .max(1000, 'must list at most 1000 endpoints (a create reads the claim of every endpoint it may take)')
    .superRefine((endpoints, ctx) => {
      const keys = endpoints.map(endpointKey);
      keys.forEach((k, i) => {
        if (keys.indexOf(k) !== i) ctx.addIssue({ code: 'custom', path: [i], message: 'repeats an earlier endpoint' });
      });
    }),
  /**
   * Seconds a released endpoint is not claimed again. It cannot get a new IP the way a VM can: a
   * member replaced for a ban releases an endpoint whose address the target still bans, so it
   * rests first (and free endpoints are claimed least recently released first).
   */
  releaseCooldownSeconds: z.number().min(0).default(600),
  /** How long `get` waits for the endpoint to accept a TCP connection before reporting it Stopped. */
  connectTimeoutSeconds: z.number().positive().default(3),
});
export type StaticOptions = z.infer<typeof staticOptionsSchema>;

/** Identifies an endpoint (host, port, username): a vendor's one host:port is many endpoints by session username. */
export function endpointKey(e: Pick<StaticEndpoint, 'host' | 'port' | 'username'>): string {
  return `${e.host}:${e.port}:${e.username ?? ''}`;
}

/** The claim document's id for an endpoint: per provider, a hash of its key (no `/`, fixed length). */
export function claimId(provider: string, e: Pick<StaticEndpoint, 'host' | 'port' | 'username'>): string {
  return `${provider}~${createHash('sha256').update(endpointKey(e)).digest('hex').slice(0, 24)}`;
}

/**
 * @param path - the provider's config path (`config.providers.2`)
 * @throws ValidationError naming `<path>.options.<field>`
 */
export function parseStaticOptions(options: Record<string, unknown>, path: string): StaticOptions {
  const parsed = staticOptionsSchema.safeParse(options);
  if (parsed.success) return parsed.data;
  throw toValidationError(parsed.error, `${path}.options`);
}

const placementKeysSchema = z.strictObject({ country: countryCodeSchema.optional(), labels: labelsSchema.optional() });
export type StaticPlacement = z.infer<typeof placementKeysSchema>;

/**
 * A placement selects endpoints: `country` (exact) and `labels` (each must match).
 *
 * @throws ValidationError naming `spec.placement.<key>`, or `spec.placement` when no endpoint matches
 */
export function parseStaticPlacement(placement: Record<string, unknown>, endpoints: StaticEndpoint[]): StaticPlacement {
  const parsed = placementKeysSchema.safeParse(placement);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const key = issue?.code === 'unrecognized_keys' ? issue.keys[0] : issue?.path.map(String).join('.');
    const reason =
      issue?.code === 'unrecognized_keys' ? 'is not a static placement key (known: country, labels)' : issue?.message;
    throw new ValidationError(`spec.placement${key ? `.${key}` : ''}`, reason ?? 'is invalid');
  }
  if (!endpoints.some((e) => selects(parsed.data, e)))
    throw new ValidationError('spec.placement', `matches none of the ${endpoints.length} configured endpoints`);
  return parsed.data;
}

/** Whether a placement selects this endpoint. */
export function selects(p: StaticPlacement, e: StaticEndpoint): boolean {
  if (p.country !== undefined && e.country !== p.country) return false;
  return Object.entries(p.labels ?? {}).every(([k, v]) => e.labels[k] === v);
}
