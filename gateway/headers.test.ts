import { describe, expect, it } from 'vitest';
import { endToEndHeaders, hasBody } from './headers.js';

describe('hop-by-hop headers (RFC 9110 §7.6.1)', () => {
  it.each([
    ['Connection', 'keep-alive'],
    ['Proxy-Connection', 'keep-alive'],
    ['Keep-Alive', 'timeout=5'],
    ['TE', 'trailers'],
    ['Trailer', 'Expires'],
    ['Transfer-Encoding', 'chunked'],
    ['Upgrade', 'websocket'],
    ['Proxy-Authorization', 'Basic Zm9vOmJhcg=='],
    ['proxy-authorization', 'Basic Zm9vOmJhcg=='],
    ['proxy-authenticate', 'Basic realm="x"'],
  ])('drops %s', (name, value) => {
    expect(endToEndHeaders([name, value, 'Accept', '*/*'])).toEqual(['Accept', '*/*']);
    expect(endToEndHeaders(['Accept', '*/*', name, value])).toEqual(['Accept', '*/*']);
  });

  it('drops every field the Connection header names, before or after it, in any case and over several Connection lines', () => {
    const raw = [
      'x-early',
      '0',
      'Connection',
      'close, X-Secret ,X-Early',
      'x-secret',
      '1',
      'CONNECTION',
      'x-other',
      'X-Other',
      '2',
      'Host',
      'a',
      'X-SECRET',
      '3',
    ];
    expect(endToEndHeaders(raw)).toEqual(['Host', 'a']);
  });

  it('returns a flat name, value array keeping order, spelling and every repeat of end-to-end fields', () => {
    const kept = [
      ['Set-Cookie', 'x=1'],
      ['Via', '1.1 p'],
      ['set-cookie', 'y=2'],
      ['SET-COOKIE', 'z=3'],
    ];
    const raw = [['Host', 'a'], ['Proxy-Authorization', 'Basic Z3c6cHc='], ...kept, ['Connection', 'keep-alive']];
    expect(endToEndHeaders(raw.flat())).toEqual([['Host', 'a'], ...kept].flat());
  });

  it('also drops the names asked for, in any case, and leaves the input as it was', () => {
    const raw = ['Content-Length', '3', 'Accept', '*/*', 'content-length', '3'];
    expect(endToEndHeaders(raw, new Set(['content-length']))).toEqual(['Accept', '*/*']);
    expect(raw).toHaveLength(6);
  });

  it.each([
    [{ 'content-length': '3' }, true],
    [{ 'content-length': '0' }, false],
    [{ 'transfer-encoding': 'chunked' }, true],
    [{}, false],
  ])('hasBody(%o) is %s', (headers, expected) => expect(hasBody(headers)).toBe(expected));
});
