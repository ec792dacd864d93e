/** The Node proxy-server's source-address rule and its reading of a request's destination. */
import { describe, expect, it } from 'vitest';
import { destinationOf, sourceFor } from './config.js';

describe('node proxy-server: source address', () => {
  it.each([
    ['127.0.0.1', '127.1.0.5', '127.1.0.5'],
    ['localhost', '127.1.0.5', '127.1.0.5'],
    ['example.com', '127.1.0.5', undefined],
    ['10.1.2.3', '127.1.0.5', undefined],
    ['example.com', '203.0.113.7', '203.0.113.7'],
    ['127.0.0.1', undefined, undefined],
  ])('towards %s, local address %s leaves from %s', (destination, local, want) => {
    expect(sourceFor(destination, local)).toBe(want);
  });

  it('reads the destination of a CONNECT and of an absolute URI', () => {
    expect(destinationOf('CONNECT', 'example.com:443')).toBe('example.com');
    expect(destinationOf('CONNECT', '[::1]:443')).toBe('::1');
    expect(destinationOf('GET', 'http://127.0.0.1:8088/x')).toBe('127.0.0.1');
    expect(destinationOf('GET', '/relative')).toBeUndefined();
  });
});
