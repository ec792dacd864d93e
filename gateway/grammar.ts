/**
 * The username grammar clients steer the gateway with: `USER[-key-value]...` (docs/gateway.md,
 * "Username grammar"). Pure parsing; the credential check (auth.ts) splits USER off first.
 */

import { COUNTRY_CODE_RULE, countryCode } from '../shared/domain/country.js';
/** What a client asked for in its username. Absent fields ask for nothing. */
export interface Steering {
  /** Keeps requests and tunnels on one fleet proxy. */
  session?: string;
  /** How long the session lasts without use (`sesstime`, minutes). */
  sessionIdleMs?: number;
  /** Fail rather than move the session to another proxy (`oneip-true`). */
  strict: boolean;
  pool?: string;
  provider?: string;
  /** Proxies labelled `region=<value>`. */
  region?: string;
  /** Proxies labelled `zone=<value>`. */
  zone?: string;
  /** ISO 3166-1 alpha-2, upper case (the discovery entry's `country`). */
  country?: string;
  /** The egress's autonomous system number (the discovery entry's `asn`). */
  asn?: number;
}

/** The username named a key the gateway does not know, or gave a value it cannot take. */
export class GrammarError extends Error {
  override readonly name = 'GrammarError';
  /** The key at fault, as written. */
  readonly key: string;
  constructor(key: string, message: string) {
    super(`username key "${key}": ${message}`);
    this.key = key;
  }
}

const DNS_LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const LABEL_VALUE = /^[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?$/;
/** The longest session Oxylabs documents is 30 minutes; the gateway allows a day. */
const MAX_SESSTIME_MINUTES = 1440;

/** Every key, with how its value is checked and where it goes. */
const KEYS: Record<string, (value: string, into: Steering) => void> = {
  session(value, into) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(value)) throw new GrammarError('session', 'must be 1–64 of A-Z a-z 0-9 _ . -');
    into.session = value;
  },
  sesstime(value, into) {
    const minutes = Number(value);
    if (!/^\d+$/.test(value) || minutes < 1 || minutes > MAX_SESSTIME_MINUTES)
      throw new GrammarError('sesstime', `must be whole minutes from 1 to ${MAX_SESSTIME_MINUTES}`);
    into.sessionIdleMs = minutes * 60_000;
  },
  oneip(value, into) {
    if (value !== 'true' && value !== 'false') throw new GrammarError('oneip', 'must be true or false');
    into.strict = value === 'true';
  },
  pool(value, into) {
    if (!DNS_LABEL.test(value)) throw new GrammarError('pool', 'must be a pool name (a DNS-1123 label)');
    into.pool = value;
  },
  provider(value, into) {
    if (!DNS_LABEL.test(value)) throw new GrammarError('provider', 'must be a provider name (a DNS-1123 label)');
    into.provider = value;
  },
  region(value, into) {
    if (!LABEL_VALUE.test(value)) throw new GrammarError('region', 'must be a label value');
    into.region = value;
  },
  zone(value, into) {
    if (!LABEL_VALUE.test(value)) throw new GrammarError('zone', 'must be a label value');
    into.zone = value;
  },
  country(value, into) {
    const code = countryCode(value);
    if (code === undefined) throw new GrammarError('country', `${COUNTRY_CODE_RULE}, got ${JSON.stringify(value)}`);
    into.country = code;
  },
  asn(value, into) {
    const n = Number(value.replace(/^AS/i, ''));
    if (!/^(AS)?\d{1,10}$/i.test(value) || !Number.isSafeInteger(n) || n < 1 || n > 4_294_967_295)
      throw new GrammarError('asn', 'must be an AS number such as 15169 (or AS15169)');
    into.asn = n;
  },
};

/** The keys the grammar knows, in the order the docs list them. */
export const GRAMMAR_KEYS: readonly string[] = Object.keys(KEYS);

/**
 * Splits the text after `USER-` into words at single hyphens; a doubled hyphen is a literal `-`
 * inside a word, so a value may contain a key's name (`pool-eu--zone-1` is the pool `eu-zone-1`).
 */
function words(text: string): string[] {
  const out: string[] = [];
  let word = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c !== '-') word += c;
    else if (text[i + 1] === '-') {
      word += '-';
      i++;
    } else {
      out.push(word);
      word = '';
    }
  }
  out.push(word);
  return out;
}

/**
 * Parses the keys after USER.
 *
 * @param rest - the username after `USER-` (empty when the username is USER alone)
 * @returns what the client asked for
 * @throws GrammarError naming the unknown, repeated or ill-valued key
 * @example
 * parseSteering('session-cart42-country-de-pool-eu-west'); // { session: 'cart42', country: 'DE', pool: 'eu-west', strict: false }
 */
export function parseSteering(rest: string): Steering {
  const steering: Steering = { strict: false };
  if (rest === '') return steering;
  const list = words(rest);
  const seen = new Set<string>();
  for (let i = 0; i < list.length;) {
    const key = list[i] ?? '';
    const apply = Object.hasOwn(KEYS, key) ? KEYS[key] : undefined;
    if (!apply) throw new GrammarError(key, `is not a key the gateway knows (${GRAMMAR_KEYS.join(', ')})`);
    if (seen.has(key)) throw new GrammarError(key, 'is given twice');
    seen.add(key);
    // A value runs until the next word that is a key.
    let end = i + 1;
    while (end < list.length && !Object.hasOwn(KEYS, list[end] ?? '')) end++;
    const value = list.slice(i + 1, end).join('-');
    if (value === '') throw new GrammarError(key, 'has no value');
    apply(value, steering);
    i = end;
  }
  if (steering.sessionIdleMs !== undefined && steering.session === undefined)
    throw new GrammarError('sesstime', 'applies to a session: give session-<id> too');
  if (steering.strict && steering.session === undefined)
    throw new GrammarError('oneip', 'applies to a session: give session-<id> too');
  return steering;
}

/** The discovery scope a steering asks for: the keys that choose which proxies, in a stable order. */
export function scopeOf(s: Steering): { key: string; value: string }[] {
  const out: { key: string; value: string }[] = [];
  if (s.pool !== undefined) out.push({ key: 'pool', value: s.pool });
  if (s.provider !== undefined) out.push({ key: 'provider', value: s.provider });
  if (s.region !== undefined) out.push({ key: 'region', value: s.region });
  if (s.zone !== undefined) out.push({ key: 'zone', value: s.zone });
  if (s.country !== undefined) out.push({ key: 'country', value: s.country });
  if (s.asn !== undefined) out.push({ key: 'asn', value: String(s.asn) });
  return out;
}
