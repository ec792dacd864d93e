/** Token entries (`scope:token` or bare), the scopes' order, and the least token for a need. */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config/load.js';
import { ValidationError } from '../errors.js';
import { API_SCOPES, apiTokenSchema, grants, leastToken } from './scopes.js';

const base = { installationId: 'scopes', echoUrl: 'http://127.0.0.1:1/', providers: [] };
const secret = 'a-secret-token-0123456789';

function failure(run: () => unknown): ValidationError {
  try {
    run();
  } catch (err) {
    if (err instanceof ValidationError) return err;
    throw err;
  }
  throw new Error('no error');
}

describe('scopes', () => {
  it.each([
    ['discover', 'discover', true],
    ['discover', 'read', false],
    ['discover', 'admin', false],
    ['read', 'discover', true],
    ['read', 'read', true],
    ['read', 'admin', false],
    ['admin', 'discover', true],
    ['admin', 'read', true],
    ['admin', 'admin', true],
  ] as const)('a %s token may call a route that needs %s: %s', (held, needed, allowed) => {
    expect(grants(held, needed)).toBe(allowed);
  });

  it.each([
    [`discover:${secret}`, { scope: 'discover', token: secret }],
    [`read:${secret}`, { scope: 'read', token: secret }],
    [`admin:${secret}`, { scope: 'admin', token: secret }],
    // Bare: admin, as every token was before scopes.
    [secret, { scope: 'admin', token: secret }],
    // Only the first colon separates.
    [`read:${secret}:x`, { scope: 'read', token: `${secret}:x` }],
  ])('%s', (entry, parsed) => {
    expect(apiTokenSchema.parse(entry)).toEqual(parsed);
  });

  it.each([
    [`reader:${secret}`, /the part before ":" must be a scope \(discover, read, admin\)/],
    [`Admin:${secret}`, /must be a scope/],
    ['read:short', /at least 16 characters/],
    ['short', /at least 16 characters/],
  ])('%s is refused, never echoed', (entry, message) => {
    const got = apiTokenSchema.safeParse(entry);
    expect(got.success).toBe(false);
    const text = got.error?.issues[0]?.message ?? '';
    expect(text).toMatch(message);
    expect(text).not.toContain(secret);
  });

  it('the config and EGRESS_API_TOKENS take the same entries; errors name where they came from', () => {
    const env = { EGRESS_API_TOKENS: `admin:${secret}, discover:${secret}-d ,read:${secret}-r` };
    expect(parseConfig(base, env).apiTokens).toEqual([
      { scope: 'admin', token: secret },
      { scope: 'discover', token: `${secret}-d` },
      { scope: 'read', token: `${secret}-r` },
    ]);
    expect(parseConfig({ ...base, apiTokens: [`discover:${secret}`] }).apiTokens).toEqual([
      { scope: 'discover', token: secret },
    ]);
    const fromEnv = failure(() => parseConfig(base, { EGRESS_API_TOKENS: `${secret},bogus:${secret}` }));
    expect(fromEnv.field).toBe('EGRESS_API_TOKENS.1');
    expect(fromEnv.message).not.toContain(secret);
    const fromFile = failure(() => parseConfig({ ...base, apiTokens: [`bogus:${secret}`] }));
    expect(fromFile.field).toBe('config.apiTokens.0');
    const twice = failure(() => parseConfig(base, { EGRESS_API_TOKENS: `read:${secret},admin:${secret}` }));
    expect(twice.field).toBe('config.apiTokens');
    expect(twice.message).toMatch(/only once/);
  });

  it('leastToken hands out the smallest scope that will do', () => {
    const tokens = API_SCOPES.map((scope) => ({ scope, token: `${scope}-token` })).reverse();
    expect(leastToken(tokens, 'discover')).toBe('discover-token');
    expect(leastToken(tokens, 'read')).toBe('read-token');
    expect(leastToken(tokens, 'admin')).toBe('admin-token');
    expect(leastToken([{ scope: 'admin', token: 'only' }], 'discover')).toBe('only');
    expect(leastToken([{ scope: 'discover', token: 'd' }], 'admin')).toBeUndefined();
  });
});
