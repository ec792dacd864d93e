/**
 * A create command's credentials sealed for the relay it is addressed to: AES-256-GCM under a key
 * derived (HKDF-SHA256) from that relay's signing key, with the relay, the command id and the
 * instance name as associated data. A command then holds no password in clear on `relay-commands`,
 * in the `dead-letters-audit` subscription or in any log of a message, and a sealed box copied into
 * another command, for another instance or relay, does not open.
 *
 * Sealed rather than a reference the relay resolves: a reference would need the relay to read the
 * control plane's credentials store, a grant over every proxy's password on every relay host; the
 * relay already holds its key, and nothing more is needed to open what is sent to it.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { ValidationError } from '../errors.js';
import { credentialsSchema, type Credentials } from '../providers/contract.js';
import type { SigningKey } from './signature.js';

const base64url = (max: number) =>
  z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/, 'must be base64url')
    .max(max);

/** Sealed credentials as a command carries them. */
export const sealedCredentialsSchema = z.strictObject({
  /** The relay key the box was sealed under (`EGRESS_RELAY_KEYS`). */
  keyId: z.string().min(1).max(64),
  /** The 96-bit GCM nonce. */
  iv: base64url(16),
  /** Ciphertext then the 128-bit tag. */
  box: base64url(1024),
});
export type SealedCredentials = z.infer<typeof sealedCredentialsSchema>;

/** What a sealed box is bound to: opened for another relay, command or instance, it fails. */
export interface SealContext {
  relay: string;
  commandId: string;
  name: string;
}

const INFO = 'egress.dev/relay/v1 credentials';
const TAG_BYTES = 16;

function boxKey(key: SigningKey): Buffer {
  return Buffer.from(hkdfSync('sha256', key.secret, Buffer.alloc(0), INFO, 32));
}

function associated({ relay, commandId, name }: SealContext): Buffer {
  return Buffer.from(`${INFO}\n${relay}\n${commandId}\n${name}`, 'utf8');
}

/** Seals credentials under the relay's (first, signing) key. */
export function sealCredentials(key: SigningKey, context: SealContext, credentials: Credentials): SealedCredentials {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', boxKey(key), iv, { authTagLength: TAG_BYTES });
  cipher.setAAD(associated(context));
  const body = Buffer.concat([cipher.update(JSON.stringify(credentials), 'utf8'), cipher.final()]);
  const box = Buffer.concat([body, cipher.getAuthTag()]);
  return { keyId: key.id, iv: iv.toString('base64url'), box: box.toString('base64url') };
}

/**
 * Opens sealed credentials with the relay's keys.
 *
 * @param field - where the box sits in the command, for the error
 * @throws ValidationError naming `field` when no key has its id, or it does not open (tampered,
 *   or sealed for another relay, command or instance)
 */
export function openCredentials(
  keys: readonly SigningKey[],
  context: SealContext,
  sealed: SealedCredentials,
  field: string,
): Credentials {
  const key = keys.find((k) => k.id === sealed.keyId);
  if (!key)
    throw new ValidationError(`${field}.keyId`, `key ${JSON.stringify(sealed.keyId)} is not one of this relay's`);
  const box = Buffer.from(sealed.box, 'base64url');
  const iv = Buffer.from(sealed.iv, 'base64url');
  if (box.length <= TAG_BYTES || iv.length !== 12) throw new ValidationError(field, 'is not a sealed box');
  let text: string;
  try {
    const decipher = createDecipheriv('aes-256-gcm', boxKey(key), iv, { authTagLength: TAG_BYTES });
    decipher.setAAD(associated(context));
    decipher.setAuthTag(box.subarray(box.length - TAG_BYTES));
    text = Buffer.concat([decipher.update(box.subarray(0, box.length - TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new ValidationError(field, `does not open under key ${key.id} for this relay, command and instance`);
  }
  const parsed = credentialsSchema.safeParse(JSON.parse(text));
  if (!parsed.success) throw new ValidationError(field, 'opens to something other than credentials');
  return parsed.data;
}
