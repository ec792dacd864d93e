/** Discovery: which Ready proxies a client may use, filtered, de-duplicated by egress IP, ordered. */
import { ValidationError } from '../errors.js';
import { dnsLabel, POOL_LABEL } from '../domain/names.js';
import { COUNTRY_CODE_RULE, countryCode } from '../domain/country.js';
import { banApplies, excludedFor, normaliseTarget } from '../domain/reports.js';
import type { ProxyDoc } from '../domain/status.js';
import { inCountry } from '../egress-location/verify.js';
import { DISCOVERY_PAGE, FRESH_PAGE, parseCursor, parseLimit } from './paging.js';

export interface DiscoveryQuery {
  provider?: string | undefined;
  /** `key=value` pairs that must all match. */
  labels: [string, string][];
  maxLatencyMs?: number | undefined;
  /** One proxy per egress IP. */
  distinct: boolean;
  /** How many proxies this call reads from the store (and so answers at most), after `cursor`. */
  limit: number;
  /** The name the previous page read up to (shared/api/paging.ts), or null for the first page. */
  cursor: string | null;
  /**
   * `fresh=true` with `pool`: the pool's Ready members read now (at most `limit`, one page), not a
   * page of the fleet kept up to 2 s: how a gateway holding a request for a waking pool finds its
   * first member. Only its pool's documents are read, so it stays cheap however often it is asked.
   */
  freshPool?: string | undefined;
  /** Random order within the page (spreads load across clients); otherwise by name. */
  random: boolean;
  format: 'json' | 'urls';
  /** Skip proxies a targeted report excludes for this domain (normalised). */
  for?: string | undefined;
  /** Strict country: located there and not `EgressVerified=False` (shared/egress-location/verify.ts#inCountry). */
  country?: string | undefined;
  /** Only proxies whose egress IP is in this autonomous system. */
  asn?: number | undefined;
}

/** Parses query parameters, naming the parameter of an error. */
export function parseDiscoveryQuery(params: URLSearchParams): DiscoveryQuery {
  const number = (key: string): number | undefined => {
    const raw = params.get(key);
    if (raw === null || raw === '') return undefined;
    const n = Number(raw);
    if (!Number.isInteger(n) || n < 0) throw new ValidationError(key, 'must be a non-negative integer');
    return n;
  };
  const format = params.get('format') ?? 'json';
  if (format !== 'json' && format !== 'urls') throw new ValidationError('format', 'must be "json" or "urls"');
  const order = params.get('order') ?? 'name';
  if (order !== 'name' && order !== 'random') throw new ValidationError('order', 'must be "name" or "random"');
  const pool = params.get('pool');
  if (pool !== null && !dnsLabel.safeParse(pool).success)
    throw new ValidationError('pool', 'must be a pool name (a DNS-1123 label)');
  const forRaw = params.get('for');
  const forDomain = forRaw === null ? undefined : normaliseTarget(forRaw);
  if (forRaw !== null && forDomain === undefined)
    throw new ValidationError(
      'for',
      'must be a host name like example.com (or an IP address), without scheme, port or path',
    );
  const countryRaw = params.get('country');
  const country = countryRaw === null ? undefined : countryCode(countryRaw);
  if (countryRaw !== null && country === undefined) throw new ValidationError('country', COUNTRY_CODE_RULE);
  const asn = number('asn');
  const fresh = params.get('fresh') ?? 'false';
  if (fresh !== 'true' && fresh !== 'false') throw new ValidationError('fresh', 'must be "true" or "false"');
  if (fresh === 'true' && pool === null)
    throw new ValidationError('fresh', 'needs pool=<name>: only the Ready members of one pool are read fresh');
  if (fresh === 'true' && params.get('cursor') !== null)
    throw new ValidationError('cursor', 'a fresh=true answer is one page: it takes no cursor');
  const distinct = params.get('distinct') ?? 'false';
  if (distinct !== 'true' && distinct !== 'false') throw new ValidationError('distinct', 'must be "true" or "false"');
  return {
    provider: params.get('provider') ?? undefined,
    labels: [
      ...parseLabelFilters(params.getAll('label')),
      ...(pool !== null ? [[POOL_LABEL, pool] as [string, string]] : []),
    ],
    for: forDomain,
    country,
    asn,
    maxLatencyMs: number('maxLatencyMs'),
    distinct: distinct === 'true',
    limit: parseLimit(params.get('limit'), fresh === 'true' ? FRESH_PAGE : DISCOVERY_PAGE),
    cursor: parseCursor(params.get('cursor')),
    freshPool: fresh === 'true' ? (pool ?? undefined) : undefined,
    random: order === 'random',
    format,
  };
}

/** `k=v` label filters; `field` names the parameter in errors. */
export function parseLabelFilters(values: string[], field = 'label'): [string, string][] {
  return values.map((v) => {
    const i = v.indexOf('=');
    if (i <= 0) throw new ValidationError(field, `must be key=value, got ${JSON.stringify(v)}`);
    return [v.slice(0, i), v.slice(i + 1)];
  });
}

export function matchesLabels(doc: ProxyDoc, labels: [string, string][]): boolean {
  return labels.every(([k, v]) => doc.metadata.labels[k] === v);
}

/** Whether traffic reports keep this proxy out: its instance is banned, or excluded for the domain asked for. */
function reportedAway(doc: ProxyDoc, domain: string | undefined, now: number): boolean {
  const created = doc.status.instance ? Date.parse(doc.status.instance.createdAt) : undefined;
  if (banApplies(doc.status.ban, created)) return true;
  return domain !== undefined && excludedFor(doc.status.reports, domain, created, now);
}

/**
 * Selects the proxies to hand out.
 *
 * @param random - a source of randomness in [0, 1) (injected for tests)
 * @param now - the time targeted exclusions are compared with
 */
export function selectForDiscovery(
  docs: ProxyDoc[],
  q: DiscoveryQuery,
  random: () => number = Math.random,
  now: number = Date.now(),
): ProxyDoc[] {
  let picked = docs.filter(
    (d) =>
      d.status.phase === 'Ready' &&
      !reportedAway(d, q.for, now) &&
      d.status.address !== undefined &&
      !d.deletionRequestedAt &&
      (q.provider === undefined || d.spec.provider === q.provider) &&
      matchesLabels(d, q.labels) &&
      (q.country === undefined || inCountry(d.status, q.country)) &&
      (q.asn === undefined || d.status.health?.asn === q.asn) &&
      (q.maxLatencyMs === undefined || (d.status.health?.latencyMs ?? Infinity) <= q.maxLatencyMs),
  );
  picked.sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  if (q.random) {
    for (let i = picked.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [picked[i], picked[j]] = [picked[j] as ProxyDoc, picked[i] as ProxyDoc];
    }
  }
  if (q.distinct) {
    const seen = new Set<string>();
    picked = picked.filter((d) => {
      const ip = d.status.health?.egressIp;
      if (ip === undefined) return true;
      if (seen.has(ip)) return false;
      seen.add(ip);
      return true;
    });
  }
  return picked.slice(0, q.limit);
}

/**
 * The URL a client uses as-is: `http://user:pass@ip:port`, or `https://…@ip:tlsPort` for the TLS
 * listener (user and password percent-encoded).
 */
export function proxyUrl(
  address: string,
  username: string,
  password: string,
  scheme: 'http' | 'https' = 'http',
): string {
  return `${scheme}://${encodeURIComponent(username)}:${encodeURIComponent(password)}@${address}`;
}

/**
 * The TLS listener of a Ready proxy as discovery hands it out: `ip:tlsPort` and the pinned
 * fingerprint, once a probe through it learnt one (before that, and without a listener, none).
 */
export function tlsEndpoint(doc: ProxyDoc): { address: string; fingerprint: string } | undefined {
  const instance = doc.status.instance;
  if (!instance?.tlsPort || !instance.tlsFingerprint || !doc.status.address) return undefined;
  return { address: `${instance.ip}:${instance.tlsPort}`, fingerprint: instance.tlsFingerprint };
}
