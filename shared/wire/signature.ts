/**
 * Authenticated relay messages: every report a relay publishes and every command the functions
 * publish to it carries an HMAC-SHA256 over the topic and the exact body, with a key only that
 * relay and the functions hold. The MAC also covers what the message is (a report or a command), so
 * a signed message of one kind never passes as the other. A relay therefore cannot speak for another relay, nor feed another
 * relay's commands, even with publish rights on both topics.
 *
 * Keys are per relay, in `EGRESS_RELAY_KEYS` (the same JSON on both sides; the relay uses its own
 * entry): `{"<relay>": [{"id": "k2", "secret": "<base64, at least 32 bytes>"}, ...]}`. The first
 * key of a relay signs; every listed key verifies, which is how a key is rotated without downtime
 * (docs/operations.md, "Relay keys").
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { dnsLabel } from '../domain/names.js';
import { toValidationError } from '../domain/proxy.js';
import { ValidationError } from '../errors.js';

/** The environment variable holding the keys. */
export const RELAY_KEYS_ENV = 'EGRESS_RELAY_KEYS';

/** One key of a relay. */
export interface SigningKey {
  id: string;
  secret: Buffer;
}

/** Keys by relay; a relay's first key signs, all of them verify. */
export type RelayKeyring = ReadonlyMap<string, readonly SigningKey[]>;

/** The message attributes that carry the signature. */
export const KEY_ID_ATTRIBUTE = 'keyId';
export const SIGNATURE_ATTRIBUTE = 'signature';

const MIN_SECRET_BYTES = 32;
const keySchema = z.strictObject({
  id: z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, 'must be 1-64 characters of [A-Za-z0-9._-]'),
  secret: z
    .string()
    .refine((s) => /^[A-Za-z0-9+/_-]+={0,2}$/.test(s), 'must be base64')
    .refine(
      (s) => Buffer.from(s, 'base64').length >= MIN_SECRET_BYTES,
      `must decode to at least ${MIN_SECRET_BYTES} bytes`,
    ),
});
const keyringSchema = z.record(
  dnsLabel,
  z
    .array(keySchema)
    .min(1)
    .refine((keys) => new Set(keys.map((k) => k.id)).size === keys.length, 'key ids must be unique'),
);

/**
 * Parses the keyring's JSON text.
 *
 * @throws ValidationError naming the field (`EGRESS_RELAY_KEYS.onprem.0.secret`); never the secret
 */
export function parseRelayKeys(text: string, field = RELAY_KEYS_ENV): RelayKeyring {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ValidationError(field, `is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = keyringSchema.safeParse(json);
  if (!parsed.success) throw toValidationError(parsed.error, field);
  return new Map(
    Object.entries(parsed.data).map(([relay, keys]) => [
      relay,
      keys.map((k) => ({ id: k.id, secret: Buffer.from(k.secret, 'base64') })),
    ]),
  );
}

/** The keyring from the environment, or `undefined` when `EGRESS_RELAY_KEYS` is unset or empty. */
export function relayKeysFromEnv(env: Record<string, string | undefined> = process.env): RelayKeyring | undefined {
  const text = env[RELAY_KEYS_ENV];
  return text === undefined || text.trim() === '' ? undefined : parseRelayKeys(text);
}

/** The development flag that lets relays and `relay-report` run without keys: its one accepted value is `development`. */
export const UNSIGNED_RELAYS_ENV = 'EGRESS_UNSIGNED_RELAYS';

/** Whether the environment explicitly allows unsigned relay messages (development only). */
export function unsignedRelaysAllowed(env: Record<string, string | undefined>): boolean {
  const flag = env[UNSIGNED_RELAYS_ENV];
  if (flag === undefined || flag === '') return false;
  if (flag !== 'development') throw new ValidationError(UNSIGNED_RELAYS_ENV, 'must be "development" when set');
  return true;
}

/** Why a relay or `relay-report` without keys refuses to run. */
export const MISSING_KEYS_REASON = `is not set: relay messages would be unauthenticated and credentials would cross the bus in clear; set it (docs/operations.md, "Relay keys"), or ${UNSIGNED_RELAYS_ENV}=development for development only`;

/**
 * A relay's own keys from the environment: fails closed.
 *
 * @returns the relay's keys, or undefined only when they are unset and `EGRESS_UNSIGNED_RELAYS=development`
 * @throws ValidationError on `EGRESS_RELAY_KEYS` when unset (without the flag) or holding no key for `relay`
 */
export function relayOwnKeys(
  env: Record<string, string | undefined>,
  relay: string,
): readonly SigningKey[] | undefined {
  const keyring = relayKeysFromEnv(env);
  const allowed = unsignedRelaysAllowed(env);
  if (!keyring) {
    if (allowed) return undefined;
    throw new ValidationError(RELAY_KEYS_ENV, MISSING_KEYS_REASON);
  }
  const keys = keyring.get(relay);
  if (!keys) throw new ValidationError(RELAY_KEYS_ENV, `holds no key for relay "${relay}"`);
  return keys;
}

/** What a signed message is: a relay's report, or a command to a relay. */
export type SignedKind = 'report' | 'command';

/** `EGRESS_RELAY_KEYS` text with one fresh random key per relay (the local stack, tests). */
export function generateRelayKeys(relays: readonly string[]): string {
  return JSON.stringify(
    Object.fromEntries(relays.map((relay) => [relay, [{ id: 'k1', secret: randomBytes(32).toString('base64') }]])),
  );
}

function mac(secret: Buffer, kind: SignedKind, body: string): Buffer {
  return createHmac('sha256', secret).update(`egress.dev/relay/v1 ${kind}\n`).update(body, 'utf8').digest();
}

/**
 * What signs a message as the bus sends it: `Bus.publish` hands it the exact body text.
 *
 * @example
 * await bus.publish(topic, report, { relay }, key && signer(key, 'report'));
 */
export function signer(key: SigningKey, kind: SignedKind): (text: string) => Record<string, string> {
  return (text) => signText(key, kind, text);
}

/** The attributes that sign a body given as its exact text. */
export function signText(key: SigningKey, kind: SignedKind, text: string): Record<string, string> {
  return { [KEY_ID_ATTRIBUTE]: key.id, [SIGNATURE_ATTRIBUTE]: mac(key.secret, kind, text).toString('base64url') };
}

/** Why a message's signature is refused: the attribute at fault and the reason. */
export interface SignatureRefusal {
  field: string;
  reason: string;
}

/**
 * Checks a received message against the keys of the relay it speaks for or is addressed to.
 *
 * @param text - the body exactly as received
 * @returns `undefined` when a listed key signed exactly this body as this kind of message
 */
export function verifySignature(
  keys: readonly SigningKey[],
  kind: SignedKind,
  attributes: Readonly<Record<string, string>>,
  text: string,
): SignatureRefusal | undefined {
  const keyId = attributes[KEY_ID_ATTRIBUTE];
  const signature = attributes[SIGNATURE_ATTRIBUTE];
  if (keyId === undefined)
    return { field: `attributes.${KEY_ID_ATTRIBUTE}`, reason: 'missing: the message is not signed' };
  if (signature === undefined)
    return { field: `attributes.${SIGNATURE_ATTRIBUTE}`, reason: 'missing: the message is not signed' };
  const key = keys.find((k) => k.id === keyId);
  if (!key)
    return {
      field: `attributes.${KEY_ID_ATTRIBUTE}`,
      reason: `key ${JSON.stringify(keyId.slice(0, 64))} is not one of this relay's keys (${keys.map((k) => k.id).join(', ')})`,
    };
  const expected = mac(key.secret, kind, text);
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    return { field: `attributes.${SIGNATURE_ATTRIBUTE}`, reason: `does not match the body under key ${key.id}` };
  return undefined;
}
