/** A POST body that must be one JSON object of a strict schema: the checks every such route makes, once. */
import type { z } from 'zod';
import { toValidationError } from '../domain/proxy.js';
import { showKey, unsafeJson } from '../domain/text.js';
import { ValidationError } from '../errors.js';

/**
 * `body` parsed by `schema`, refused naming the field: not an object (`(body)`, with `example`),
 * an unsafe key or string, a key the schema does not know (listing the ones it does), or a bad value.
 *
 * @param what - what the body is, for the unknown-key message ("a report")
 * @throws ValidationError naming the field and the reason
 */
export function parseObjectBody<S extends z.ZodObject>(
  schema: S,
  body: unknown,
  what: string,
  example: string,
): z.infer<S> {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw new ValidationError('(body)', `must be a JSON object like ${example}`);
  const unsafe = unsafeJson(body);
  if (unsafe) throw new ValidationError(unsafe.field, unsafe.reason);
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  if (issue?.code === 'unrecognized_keys' && issue.keys[0] !== undefined)
    throw new ValidationError(
      showKey(issue.keys[0]),
      `is not a field of ${what} (allowed: ${Object.keys(schema.shape).join(', ')})`,
    );
  throw toValidationError(parsed.error);
}
