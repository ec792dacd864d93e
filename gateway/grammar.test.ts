/** The username grammar: keys, values that hold hyphens, the doubled-hyphen escape, and refusals that name the key. */
import { describe, expect, it } from 'vitest';
import { GrammarError, parseSteering, scopeOf } from './grammar.js';

describe('gateway grammar: parsing', () => {
  it.each([
    ['', { strict: false }],
    ['session-cart42', { session: 'cart42', strict: false }],
    ['session-a.b_C-9', { session: 'a.b_C-9', strict: false }],
    ['session-s1-sesstime-15', { session: 's1', sessionIdleMs: 900_000, strict: false }],
    ['session-s1-oneip-true', { session: 's1', strict: true }],
    ['country-de-asn-15169', { country: 'DE', asn: 15169, strict: false }],
    ['asn-AS3320', { asn: 3320, strict: false }],
    // Values run until the next key: pool and provider names are DNS labels with hyphens.
    ['pool-eu-west-1-provider-my-gcp', { pool: 'eu-west-1', provider: 'my-gcp', strict: false }],
    ['region-europe-west4-zone-europe-west4-a', { region: 'europe-west4', zone: 'europe-west4-a', strict: false }],
    // A doubled hyphen is a hyphen that never starts a key: the pool `eu-zone-1`.
    ['pool-eu--zone-1', { pool: 'eu-zone-1', strict: false }],
    ['session-a----b', { session: 'a--b', strict: false }],
  ])('%j', (rest, expected) => {
    expect(parseSteering(rest)).toEqual(expected);
  });

  it.each([
    ['colour-red', 'colour', /not a key the gateway knows/],
    ['sessid-x', 'sessid', /not a key/],
    ['session-a-session-b', 'session', /given twice/],
    ['session', 'session', /has no value/],
    ['session-a-pool', 'pool', /has no value/],
    ['country-xx', 'country', /ISO 3166-1 alpha-2/],
    ['country-deu', 'country', /ISO 3166-1 alpha-2/],
    ['country-de-sesion-x', 'country', /ISO 3166-1 alpha-2/],
    ['asn-0', 'asn', /AS number/],
    ['asn-x1', 'asn', /AS number/],
    ['sesstime-0-session-a', 'sesstime', /whole minutes/],
    ['sesstime-1441-session-a', 'sesstime', /whole minutes/],
    ['sesstime-5', 'sesstime', /give session-<id> too/],
    ['oneip-true', 'oneip', /give session-<id> too/],
    ['oneip-yes-session-a', 'oneip', /true or false/],
    ['pool-Crawl', 'pool', /DNS-1123/],
    ['provider-My_Gcp', 'provider', /DNS-1123/],
    ['session-' + 'x'.repeat(65), 'session', /1–64/],
  ])('refuses %j naming %s', (rest, key, message) => {
    let thrown: unknown;
    try {
      parseSteering(rest);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(GrammarError);
    expect((thrown as GrammarError).key).toBe(key);
    expect((thrown as GrammarError).message).toMatch(message);
    expect((thrown as GrammarError).message).toContain(`"${key}"`);
  });

  it('lists the keys that choose proxies, in a stable order', () => {
    expect(scopeOf(parseSteering('asn-1-session-x-country-fr-pool-a'))).toEqual([
      { key: 'pool', value: 'a' },
      { key: 'country', value: 'FR' },
      { key: 'asn', value: '1' },
    ]);
    expect(scopeOf(parseSteering('session-x-sesstime-3'))).toEqual([]);
  });
});
