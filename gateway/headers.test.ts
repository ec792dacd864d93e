import { describe, expect, it } from 'vitest';
import { connectionOptions, endToEndHeaders, hasBody, toOutgoing } from './headers.js';

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
    ['proxy-authenticate', 'Basic realm="x"'],
  ])('drops %s', (name, value) => {
    expect(endToEndHeaders([name, value, 'Accept', '*/*'])).toEqual([['Accept', '*/*']]);
  });

  it('drops every field the Connection header names, in any case and over several Connection lines', () => {
    const raw = [
      'Connection',
      'close, X-Secret',
      'x-secret',
      '1',
      'CONNECTION',
      'x-other',
      'X-Other',
      '2',
      'Host',
      'a',
    ];
    expect(endToEndHeaders(raw)).toEqual([['Host', 'a']]);
  });

  it('keeps end-to-end fields, their order, case and repeats', () => {
    const raw = ['Host', 'a', 'Set-Cookie', 'x=1', 'set-cookie', 'y=2', 'Via', '1.1 p'];
    expect(endToEndHeaders(raw)).toEqual([
      ['Host', 'a'],
      ['Set-Cookie', 'x=1'],
      ['set-cookie', 'y=2'],
      ['Via', '1.1 p'],
    ]);
    expect(toOutgoing(endToEndHeaders(raw))).toEqual({ Host: 'a', 'Set-Cookie': ['x=1', 'y=2'], Via: '1.1 p' });
  });

  it('parses connection options', () => {
    expect([...connectionOptions(['Keep-Alive, Foo', ' bar '])]).toEqual(['keep-alive', 'foo', 'bar']);
    expect(connectionOptions(undefined).size).toBe(0);
  });

  it.each([
    [{ 'content-length': '3' }, true],
    [{ 'content-length': '0' }, false],
    [{ 'transfer-encoding': 'chunked' }, true],
    [{}, false],
  ])('hasBody(%o) is %s', (headers, expected) => expect(hasBody(headers)).toBe(expected));
});
