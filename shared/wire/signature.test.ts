import { describe, expect, it } from 'vitest';
import { ValidationError } from '../errors.js';
import {
  generateRelayKeys,
  parseRelayKeys,
  relayKeysFromEnv,
  relayOwnKeys,
  signer,
  signText,
  verifySignature,
  type SigningKey,
} from './signature.js';

const secret = (fill: number) => Buffer.alloc(32, fill).toString('base64');
const keyring = parseRelayKeys(
  JSON.stringify({
    onprem: [
      { id: 'k2', secret: secret(2) },
      { id: 'k1', secret: secret(1) },
    ],
    lab: [{ id: 'k1', secret: secret(9) }],
  }),
);
const keys = (relay: string): readonly SigningKey[] => keyring.get(relay) ?? [];
const [k2, k1] = keys('onprem') as [SigningKey, SigningKey];
const report = { relay: 'onprem', seq: 7, instances: [] };
const text = JSON.stringify(report);

describe('relay message signatures', () => {
  it('a body signed by any listed key of its relay verifies (rotation: the new key and the old one)', () => {
    expect(verifySignature(keys('onprem'), 'report', signer(k2, 'report')(text), text)).toBeUndefined();
    expect(verifySignature(keys('onprem'), 'report', signer(k1, 'report')(text), text)).toBeUndefined();
    expect(signer(k2, 'report')(text)).toEqual(signText(k2, 'report', text));
  });

  it.each([
    ['unsigned', {}, 'attributes.keyId'],
    ['with a key id but no signature', { keyId: 'k2' }, 'attributes.signature'],
    [
      'signed by a key the relay does not list',
      signText({ id: 'k0', secret: Buffer.alloc(32, 2) }, 'report', text),
      'attributes.keyId',
    ],
    ["signed by another relay's key of the same id", signText(keys('lab')[0]!, 'report', text), 'attributes.signature'],
    ['signed as a command', signText(k2, 'command', text), 'attributes.signature'],
    ['signed over another body', signText(k2, 'report', JSON.stringify({ ...report, seq: 8 })), 'attributes.signature'],
    [
      'with a truncated signature',
      { keyId: 'k2', signature: signText(k2, 'report', text)['signature']!.slice(0, 20) },
      'attributes.signature',
    ],
  ])('a report %s is refused naming %s', (_what, attributes, field) => {
    const refused = verifySignature(keys('onprem'), 'report', attributes, text);
    expect(refused?.field).toBe(field);
    expect(refused?.reason).not.toContain(secret(2));
  });

  it.each([
    ['not JSON', '{', 'EGRESS_RELAY_KEYS'],
    [
      'a short secret',
      JSON.stringify({ onprem: [{ id: 'k1', secret: Buffer.alloc(16).toString('base64') }] }),
      'EGRESS_RELAY_KEYS.onprem.0.secret',
    ],
    [
      'a secret that is not base64',
      JSON.stringify({ onprem: [{ id: 'k1', secret: '!'.repeat(48) }] }),
      'EGRESS_RELAY_KEYS.onprem.0.secret',
    ],
    [
      'a relay name that is not a DNS label',
      JSON.stringify({ OnPrem: [{ id: 'k1', secret: secret(1) }] }),
      'EGRESS_RELAY_KEYS.OnPrem',
    ],
    ['no key for a relay', JSON.stringify({ onprem: [] }), 'EGRESS_RELAY_KEYS.onprem'],
    [
      'the same key id twice',
      JSON.stringify({
        onprem: [
          { id: 'k1', secret: secret(1) },
          { id: 'k1', secret: secret(2) },
        ],
      }),
      'EGRESS_RELAY_KEYS.onprem',
    ],
    [
      'a key id with a space',
      JSON.stringify({ onprem: [{ id: 'k 1', secret: secret(1) }] }),
      'EGRESS_RELAY_KEYS.onprem.0.id',
    ],
  ])('keys with %s are refused naming the field, never the secret', (_what, value, field) => {
    let error: unknown;
    try {
      parseRelayKeys(value);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).toInfo().field).toBe(field);
    expect((error as Error).message).not.toContain(secret(1));
  });

  it('generated keys parse, differ per relay and per call; an unset or empty variable means no keys', () => {
    const generated = parseRelayKeys(generateRelayKeys(['a', 'b']));
    expect([...generated.keys()]).toEqual(['a', 'b']);
    expect(generated.get('a')?.[0]?.secret.equals(generated.get('b')?.[0]?.secret ?? Buffer.alloc(0))).toBe(false);
    expect(generateRelayKeys(['a'])).not.toBe(generateRelayKeys(['a']));
    expect(relayKeysFromEnv({})).toBeUndefined();
    expect(relayKeysFromEnv({ EGRESS_RELAY_KEYS: ' ' })).toBeUndefined();
    expect(relayKeysFromEnv({ EGRESS_RELAY_KEYS: generateRelayKeys(['x']) })?.has('x')).toBe(true);
  });
});

describe('a relay fails closed', () => {
  const keys = generateRelayKeys(['lab-1']);
  it.each([
    ['no keys, no flag: refuses', {}, 'EGRESS_RELAY_KEYS'],
    ['keys without its own entry: refuses', { EGRESS_RELAY_KEYS: generateRelayKeys(['other']) }, 'EGRESS_RELAY_KEYS'],
    ['a flag with another value: refuses', { EGRESS_UNSIGNED_RELAYS: 'yes' }, 'EGRESS_UNSIGNED_RELAYS'],
  ])('%s', (_, env: Record<string, string>, field) => {
    expect(() => relayOwnKeys(env, 'lab-1')).toThrow(expect.objectContaining({ field }));
  });
  it('its own keys, or (development, said explicitly) none', () => {
    expect(relayOwnKeys({ EGRESS_RELAY_KEYS: keys }, 'lab-1')?.[0]?.id).toBe('k1');
    expect(relayOwnKeys({ EGRESS_UNSIGNED_RELAYS: 'development' }, 'lab-1')).toBeUndefined();
  });
});
