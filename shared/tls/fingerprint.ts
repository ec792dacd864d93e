/** A TLS certificate's fingerprint as discovery publishes it, apart from pinned.ts so the browser's dashboard can share the API schema without Node's TLS. */
import { z } from 'zod';

/** Lowercase hex SHA-256 of a DER certificate (`fingerprintOf` in pinned.ts computes it). */
export const tlsFingerprintSchema = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'must be the lowercase hex SHA-256 of the DER certificate');
