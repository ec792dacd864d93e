/** Output formats: kubectl-style aligned tables (table, wide), JSON and YAML, and human ages. */
import { stringify } from 'yaml';
import type { ApiProvider, ApiProviderList, ApiProxy } from '../shared/api/schema.js';
import type { GetOutput } from './command.js';

/** What kubectl prints for an empty cell. */
export const NONE = '<none>';

/**
 * Aligns rows into columns separated by three spaces, like kubectl (no trailing spaces).
 *
 * @param minWidths - widths to keep at least (a watch keeps its first table's columns)
 */
export function alignRows(rows: readonly (readonly string[])[], minWidths: readonly number[] = []): string[] {
  const widths: number[] = [...minWidths];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return rows.map((row) =>
    row
      .map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('   ')
      .trimEnd(),
  );
}

/** The column widths `alignRows` would use for `rows`. */
export function columnWidths(rows: readonly (readonly string[])[]): number[] {
  const widths: number[] = [];
  for (const row of rows) row.forEach((cell, i) => (widths[i] = Math.max(widths[i] ?? 0, cell.length)));
  return widths;
}

/**
 * A duration as kubectl prints ages: `45s`, `3m12s`, `42m`, `5h10m`, `23h`, `2d3h`, `12d`, `3y45d`.
 *
 * @param ms - elapsed milliseconds (negative clock skew shows as `0s`)
 */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  const m = Math.floor(s / 60);
  const h = Math.floor(m / 60);
  const d = Math.floor(h / 24);
  if (s < 120) return `${s}s`;
  if (m < 10) return s % 60 === 0 ? `${m}m` : `${m}m${s % 60}s`;
  if (h < 3) return `${m}m`;
  if (h < 8) return m % 60 === 0 ? `${h}h` : `${h}h${m % 60}m`;
  if (h < 48) return `${h}h`;
  if (d < 8) return h % 24 === 0 ? `${d}d` : `${d}d${h % 24}h`;
  if (d < 365 * 2) return `${d}d`;
  const y = Math.floor(d / 365);
  return d % 365 === 0 ? `${y}y` : `${y}y${d % 365}d`;
}

/** The age of an ISO timestamp at `now`, or `<none>` without one. */
export function age(iso: string | null | undefined, now: number): string {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(t) ? NONE : humanDuration(now - t);
}

function latency(ms: number | null | undefined): string {
  return typeof ms === 'number' ? `${Math.round(ms)}ms` : NONE;
}

/** Table headers of `egress get proxies` (`wide` adds the last five). */
export function proxyHeader(wide: boolean): string[] {
  return [
    'NAME',
    'PROVIDER',
    'PHASE',
    'ADDRESS',
    'AGE',
    ...(wide ? ['EGRESS-IP', 'COUNTRY', 'ASN', 'LATENCY', 'INSTANCE'] : []),
  ];
}

/** One proxy as a table row; a proxy whose deletion was requested shows `Deleting` until it is gone. */
export function proxyRow(p: ApiProxy, wide: boolean, now: number): string[] {
  const row = [
    p.metadata.name,
    p.spec.provider,
    p.status.phase,
    p.status.address ?? NONE,
    age(p.metadata.createdAt, now),
  ];
  if (!wide) return row;
  const health = p.status.health;
  const verified = p.status.conditions.find((c) => c.type === 'EgressVerified');
  // A country the provider did not expect is marked: `DE!` (describe shows both).
  const country = health?.country ? `${health.country}${verified?.status === 'False' ? '!' : ''}` : NONE;
  return [
    ...row,
    health?.egressIp ?? NONE,
    country,
    health?.asn == null ? NONE : `AS${health.asn}`,
    latency(health?.latencyMs),
    p.status.instance?.name ?? NONE,
  ];
}

/** Table header of `egress get providers`. */
export const PROVIDER_HEADER = ['NAME', 'TYPE', 'STATUS', 'LATENCY', 'LAST-CHECK', 'MESSAGE'];

function providerRow(p: ApiProvider, now: number): string[] {
  return [p.name, p.type, p.status, latency(p.latencyMs), age(p.lastCheckAt, now), p.message || NONE];
}

/** A value as pretty JSON (two spaces, trailing newline). */
export function toJson(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** A value as a YAML document. */
export function toYaml(value: unknown): string {
  return stringify(value, { lineWidth: 0 });
}

/**
 * Proxies in one of the `get` formats. A list is `{"items": [...]}` in JSON and YAML (as the API
 * answers it); a single proxy is the object itself.
 *
 * @param single - print one object rather than a list
 */
export function formatProxies(proxies: readonly ApiProxy[], output: GetOutput, now: number, single = false): string {
  if (output === 'json') return toJson(single ? proxies[0] : { items: proxies });
  if (output === 'yaml') return toYaml(single ? proxies[0] : { items: proxies });
  const wide = output === 'wide';
  return `${alignRows([proxyHeader(wide), ...proxies.map((p) => proxyRow(p, wide, now))]).join('\n')}\n`;
}

/** Providers in one of the `get` formats (`wide` adds each provider's detail as JSON). */
export function formatProviders(list: ApiProviderList, output: GetOutput, now: number): string {
  if (output === 'json') return toJson(list);
  if (output === 'yaml') return toYaml(list);
  const wide = output === 'wide';
  const header = wide ? [...PROVIDER_HEADER, 'DETAIL'] : PROVIDER_HEADER;
  const rows = list.items.map((p) => {
    const row = providerRow(p, now);
    return wide ? [...row, p.detail === undefined ? NONE : JSON.stringify(p.detail)] : row;
  });
  const db = list.egressDatabase;
  const release = (r: { package: string; version: string; publishedAt: string | null }) =>
    `${r.package} ${r.version} (published ${r.publishedAt ?? 'at an unknown date'})`;
  const footer = db ? `\nEgress location database: ${release(db.country)}; ${release(db.asn)}\n` : '';
  return `${alignRows([header, ...rows]).join('\n')}\n${footer}`;
}
