import { describe, expect, it } from 'vitest';
import { clip, isWellFormed, showKey, unsafeJson } from './text.js';

describe('text', () => {
  it.each([
    ['ascii', 'abc', true],
    ['an emoji (a surrogate pair)', 'a😀b', true],
    ['a lone high surrogate', 'a\ud800b', false],
    ['a lone low surrogate', '\udc00', false],
    ['a pair written backwards', '\ude00\ud83d', false],
  ])('isWellFormed: %s', (_what, text, well) => expect(isWellFormed(text)).toBe(well));

  it('clip replaces lone surrogates, cuts to the limit and never between the halves of a pair', () => {
    expect(clip('a\ud800b', 10)).toBe('a\ufffdb');
    expect(clip('abcdef', 3)).toBe('abc…');
    expect(clip('ab😀', 3)).toBe('ab…');
    expect(isWellFormed(clip('x😀'.repeat(3000), 4096))).toBe(true);
    expect(showKey('k'.repeat(1_000_000))).toHaveLength(65);
  });

  it.each([
    ['valid JSON', { a: [{ b: 'c' }], d: 1 }, undefined],
    [
      'a lone surrogate in a value',
      { a: [{ b: 'c\ud800' }] },
      { field: 'a.0.b', reason: 'is not valid Unicode (a lone surrogate)' },
    ],
    [
      'a lone surrogate in a key',
      JSON.parse('{"a":{"\\udc00":1}}') as unknown,
      { field: 'a.\ufffd', reason: 'key is not valid Unicode (a lone surrogate)' },
    ],
    [
      'a __proto__ key',
      JSON.parse('{"m":{"__proto__":{"x":1}}}') as unknown,
      { field: 'm.__proto__', reason: 'a key named __proto__ is not accepted' },
    ],
    ['a bare lone surrogate', '\ud800', { field: '(message)', reason: 'is not valid Unicode (a lone surrogate)' }],
  ])('unsafeJson: %s', (_what, value, found) => expect(unsafeJson(value)).toEqual(found));

  it('unsafeJson walks 100 000 levels without recursion', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}"\\ud800"${']'.repeat(100_000)}`) as unknown;
    expect(unsafeJson(deep)?.reason).toMatch(/Unicode/);
  });
});
