/** The body of `PUT /v1/proxies/{name}`, parsed into the apply request the API publishes. */
import { z } from 'zod';
import { applyRequestSchema, toValidationError, type ApplyRequest } from '../domain/proxy.js';
import { POOL_LABEL } from '../domain/pool.js';
import { unsafeJson } from '../domain/text.js';
import { ValidationError } from '../errors.js';

/** What the body may say before it becomes a request: no `action`, and `metadata` an object if given. */
const putBodySchema = z.looseObject({
  action: z.never({ error: 'is set by the method: PUT applies, DELETE deletes' }).optional(),
  metadata: z.record(z.string(), z.unknown(), { error: 'must be an object' }).optional(),
});

/**
 * Validates a PUT body for the proxy `name` (from the path) and completes it into an apply request.
 *
 * @param name - the proxy name from the path, already a DNS-1123 label
 * @param body - the parsed JSON body, untrusted
 * @returns the request to publish on `proxy-requests`
 * @throws ValidationError naming the field and the reason
 */
export function parsePutBody(name: string, body: unknown): ApplyRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('(body)', 'must be a JSON object (a Proxy)');
  // What the create function would refuse at the bus (and Firestore would not store) is refused here too.
  const unsafe = unsafeJson(body);
  if (unsafe) throw new ValidationError(unsafe.field, unsafe.reason);
  const given = putBodySchema.safeParse(body);
  if (!given.success) throw toValidationError(given.error);
  const metadata = given.data.metadata ?? {};
  if ('name' in metadata && metadata['name'] !== name)
    throw new ValidationError('metadata.name', `must equal the name in the path ("${name}")`);
  const parsed = applyRequestSchema.safeParse({ ...given.data, action: 'apply', metadata: { ...metadata, name } });
  if (!parsed.success) throw toValidationError(parsed.error);
  if (parsed.data.metadata.labels[POOL_LABEL] !== undefined)
    throw new ValidationError(`metadata.labels.${POOL_LABEL}`, 'is set only by a pool on its members');
  return parsed.data;
}
