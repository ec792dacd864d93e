/** The Proxy request on the wire (README.md "Asking for a proxy"): zod schemas and the validation that names the field. */
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { parseDuration } from './duration.js';
import { dnsLabel } from './names.js';
import { clip, showKey } from './text.js';

const LABEL_KEY = /^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;

/** A label key as Kubernetes spells it: up to 63 characters, plus an optional DNS prefix. */
export const labelKey = z.string().max(253, 'label key is too long').regex(LABEL_KEY, 'invalid label key');
/** A label value: up to 63 characters, possibly empty. */
export const labelValue = z
  .string()
  .max(63, 'label value must be at most 63 characters')
  .regex(LABEL_VALUE, 'invalid label value');

/** Labels as Kubernetes spells them: keys up to 63 (plus an optional prefix), values up to 63. */
export const labelsSchema = z
  .record(labelKey, labelValue)
  .refine((labels) => Object.keys(labels).length <= 64, 'at most 64 labels');

/** Provider-specific placement; validated by the provider. `catalogue` names a catalogue entry. */
export const placementSchema = z
  .record(
    z.string().max(63),
    z.union([
      z.string().max(1024),
      z.number(),
      z.boolean(),
      z.record(z.string(), z.string().max(1024)),
      z.array(z.string().max(1024)).max(64),
    ]),
  )
  .refine((p) => Object.keys(p).length <= 32, 'at most 32 placement keys')
  .refine((p) => p['catalogue'] === undefined || typeof p['catalogue'] === 'string', {
    message: 'must be the name of a catalogue entry',
    path: ['catalogue'],
  });

export const specSchema = z.strictObject({
  provider: dnsLabel,
  placement: placementSchema.default({}),
  port: z.number().int('must be an integer').min(0).max(65535).default(0),
  maxAge: z
    .string()
    .refine((s) => (parseDuration(s) ?? 0) >= 60_000, 'must be a duration of at least 1m, like "24h" or "90m"')
    .optional(),
});

export const metadataSchema = z.strictObject({
  name: dnsLabel,
  labels: labelsSchema.default({}),
});

const envelope = {
  apiVersion: z.literal('egress.dev/v1', { error: 'must be "egress.dev/v1"' }),
  kind: z.literal('Proxy', { error: 'must be "Proxy"' }),
};

export const applyRequestSchema = z.strictObject({
  ...envelope,
  action: z.literal('apply'),
  metadata: metadataSchema,
  spec: specSchema,
});

export const deleteRequestSchema = z.strictObject({
  ...envelope,
  action: z.literal('delete'),
  metadata: z.strictObject({ name: dnsLabel, labels: labelsSchema.optional() }),
  spec: z.unknown().optional(),
});

/** Either request, told apart by `action`. */
export const proxyRequestSchema = z.discriminatedUnion('action', [applyRequestSchema, deleteRequestSchema], {
  error: 'must be "apply" or "delete"',
});

export type ProxySpec = z.infer<typeof specSchema>;
export type ProxyMetadata = z.infer<typeof metadataSchema>;
export type ApplyRequest = z.infer<typeof applyRequestSchema>;
export type DeleteRequest = z.infer<typeof deleteRequestSchema>;
export type ProxyRequest = z.infer<typeof proxyRequestSchema>;

/**
 * Turns the first zod issue into a ValidationError naming the field path (`spec.port`). Keys in
 * the path are shown cut and as valid Unicode, and so is the reason: they echo what the sender
 * typed, and the error is stored and logged.
 */
export function toValidationError(error: z.ZodError, prefix = ''): ValidationError {
  const issue = error.issues[0];
  const path = [prefix, ...(issue?.path ?? []).map((key) => showKey(String(key)))].filter(Boolean).join('.');
  // A record key that failed its own schema: its reason ("invalid label key") says more than zod's.
  const inner = issue?.code === 'invalid_key' ? issue.issues[0]?.message : undefined;
  return new ValidationError(path || '(message)', clip(inner ?? issue?.message ?? 'invalid', 1024));
}

/**
 * Validates one request object (already JSON-decoded).
 *
 * @returns the typed request
 * @throws ValidationError naming the field and the reason
 */
export function parseProxyRequest(input: unknown): ProxyRequest {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new ValidationError('(message)', 'must be a JSON object');
  }
  const parsed = proxyRequestSchema.safeParse(input);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}
