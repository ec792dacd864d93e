import { describe, expect, it } from 'vitest';
import { countryCode, countryCodeSchema } from './country.js';

describe('countryCode', () => {
  it('upper-cases a code the CLDR data names', () => {
    expect(countryCode('de')).toBe('DE');
    expect(countryCode('US')).toBe('US');
    expect(countryCode('Gb')).toBe('GB');
  });

  it.each(['ZZ', 'QQ', 'D', 'DEU', 'd3', '', ' DE', 'ÄB'])('refuses %j', (value) => {
    expect(countryCode(value)).toBeUndefined();
  });

  it('in a config file, takes a known code in upper case only', () => {
    expect(countryCodeSchema.safeParse('DE').success).toBe(true);
    for (const value of ['de', 'ZZ', 'DEU']) expect(countryCodeSchema.safeParse(value).success).toBe(false);
  });
});
