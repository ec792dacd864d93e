/**
 * ISO 3166-1 alpha-2 country codes, checked once for every surface that takes one: a provider's
 * `country` in the config, discovery's `country=`, `egress discover --country` and the gateway
 * grammar's `country` key.
 */

import { z } from 'zod';

const regions = new Intl.DisplayNames(['en'], { type: 'region' });

/** What a refused code is told. */
export const COUNTRY_CODE_RULE = 'must be an ISO 3166-1 alpha-2 country code, like DE';

/**
 * The upper-cased code when `value` is a country code the runtime's CLDR data names (so `de` is
 * `DE`), or undefined: two letters are not enough, `ZZ` ("Unknown Region") and unassigned pairs
 * such as `QQ` are refused, as no egress database answers with them.
 *
 * @example countryCode('de') // 'DE'
 * @example countryCode('ZZ') // undefined
 */
export function countryCode(value: string): string | undefined {
  const code = value.toUpperCase();
  if (!/^[A-Z]{2}$/.test(code)) return undefined;
  const name = regions.of(code);
  return name === undefined || name === code || name === 'Unknown Region' ? undefined : code;
}

/** A country code in a config file: as {@link countryCode} takes it, and written in upper case. */
export const countryCodeSchema = z.string().refine((v) => countryCode(v) === v, `${COUNTRY_CODE_RULE}, in upper case`);
