/** The bench's table helpers. */
import { describe, expect, it } from 'vitest';
import { fmt, markdownTable, median } from './stats.js';

describe('stats', () => {
  it('median of odd, even and empty lists', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });

  it('fmt drops trailing zeros and says n/a for what is not a number', () => {
    expect(fmt(1.5, 2)).toBe('1.5');
    expect(fmt(1.0049, 2)).toBe('1');
    expect(fmt(Number.NaN)).toBe('n/a');
  });

  it('markdownTable pads every column to its widest cell', () => {
    expect(markdownTable(['a', 'bb'], [['ccc', 'd']])).toBe('| a   | bb |\n| --- | -- |\n| ccc | d  |');
  });
});
