import { describe, expect, it } from 'vitest';
import { mapSource } from '../../shared/probe/echo-map.js';
import { DEFAULT_ECHO_MAP, parseEchoMap } from './echo-map.js';

describe('egress verify: the local echo map', () => {
  const map = parseEchoMap(DEFAULT_ECHO_MAP);

  it.each([
    ['127.1.0.4', '17.0.0.4'],
    ['127.1.2.3', '17.0.2.3'],
    ['127.2.0.9', '5.9.0.9'],
    ['127.0.0.1', '127.0.0.1'],
    ['::1', '::1'],
  ])('answers %s as %s', (from, to) => {
    expect(mapSource(map, from)).toBe(to);
  });

  it.each([
    ['10.0.0.0/8=17.0.0.0', 'only loopback sources'],
    ['127.1.0.0/16', 'is not FROM/PREFIX=TO'],
    ['127.1.0.0/40=1.2.3.4', 'is not FROM/PREFIX=TO'],
  ])('refuses %s', (text, reason) => {
    expect(() => parseEchoMap(text)).toThrow(reason);
    expect(() => parseEchoMap(text)).toThrow(expect.objectContaining({ field: 'EGRESS_ECHO_MAP' }));
  });
});
