import { describe, expect, it } from 'vitest';
import { gatewayUrl, headerCheck, randomCredentials } from './auth.js';

const creds = { username: 'crawler', password: 's3cret:with:colons' };
const check = headerCheck(creds);
const basic = (s: string) => `Basic ${Buffer.from(s).toString('base64')}`;

describe('gateway credentials', () => {
  it.each([
    ['no header', undefined],
    ['not Basic', 'Bearer abc'],
    ['wrong password', basic('crawler:nope')],
    ['wrong user', basic('other:s3cret:with:colons')],
    ['no colon', basic('crawler')],
    ['a prefix of the password', basic('crawler:s3cret')],
    ['session of a wrong user', basic('other-session-1:s3cret:with:colons')],
    ['session with a wrong password', basic('crawler-session-1:nope')],
    ['an empty header', ''],
    ['garbage base64', 'Basic !!!'],
  ])('refuses %s', (_what, header) => {
    expect(check(header)).toEqual({ ok: false });
  });

  it('accepts the credentials, with and without a session', () => {
    expect(check(basic('crawler:s3cret:with:colons'))).toEqual({ ok: true, steering: { strict: false } });
    expect(check(basic('crawler-session-a.b_C-9:s3cret:with:colons'))).toEqual({
      ok: true,
      steering: { session: 'a.b_C-9', strict: false },
    });
    expect(check(`basic   ${basic('crawler:s3cret:with:colons').slice(6)}`).ok).toBe(true);
  });

  it('a user whose own name contains -session- still works when it is the whole configured name', () => {
    const odd = headerCheck({ username: 'a-session-b', password: 'p' });
    expect(odd(basic('a-session-b-session-7:p'))).toEqual({ ok: true, steering: { session: '7', strict: false } });
    expect(odd(basic('a-session-b:p'))).toEqual({ ok: true, steering: { strict: false } });
    expect(odd(basic('a:p'))).toEqual({ ok: false });
    expect(odd(basic('a-session-c:p'))).toEqual({ ok: false });
  });

  it('gateway grammar: refuses an empty session id, naming the key', () => {
    const refused = check(basic('crawler-session-:s3cret:with:colons'));
    expect(!refused.ok && refused.grammar?.key).toBe('session');
  });

  it('gateway grammar: a wrong key is named only to a client whose USER and password are right', () => {
    const refused = check(basic('crawler-colour-red:s3cret:with:colons'));
    expect(refused.ok).toBe(false);
    expect(!refused.ok && refused.grammar?.key).toBe('colour');
    expect(check(basic('crawler-colour-red:nope'))).toEqual({ ok: false });
    expect(check(basic('crawler-:s3cret:with:colons'))).toEqual({ ok: false });
  });

  it('prints a URL with escaped credentials and makes distinct random ones', () => {
    expect(gatewayUrl({ username: 'u', password: 'p@ss/1' }, '127.0.0.1', 8899)).toBe(
      'http://u:p%40ss%2F1@127.0.0.1:8899',
    );
    expect(gatewayUrl(creds, '::1', 1)).toMatch(/^http:\/\/crawler:.*@\[::1\]:1$/);
    const [a, b] = [randomCredentials(), randomCredentials()];
    expect(a.password).not.toBe(b.password);
    expect(encodeURIComponent(a.password)).toBe(a.password);
  });
});
