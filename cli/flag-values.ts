/** Checking the values of flags and operands as each verb's build reads them; a bad one is a usage error naming the flag. */
import { parseDuration } from '../shared/domain/duration.js';
import { isLoopbackAddress } from '../shared/domain/hosts.js';
import { dnsLabel } from '../shared/domain/names.js';
import { normaliseTarget } from '../shared/domain/reports.js';
import { UsageError, type FlagValues, type HostPort } from './command.js';

/** `value` if it is one of `allowed`, `fallback` when the flag is absent. */
export function oneOf<T extends string>(
  flag: string,
  value: string | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  const found = allowed.find((a) => a === value);
  if (!found) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')} (got "${value}")`);
  return found;
}

export function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`--${flag} must be a positive integer`);
  return Number(value);
}

/** `--timeout` of the waiting verbs, in ms (default 5 minutes). */
export function timeout(value: string | undefined): number {
  if (value === undefined) return 5 * 60_000;
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) throw new UsageError(`--timeout must be a duration like 90s, 5m or 1h`);
  return ms;
}

/** `--wake-timeout 120s`: 1 s to 1 h; default 120 s. */
export function wakeTimeout(value: string | undefined): number {
  if (value === undefined) return 120_000;
  const ms = parseDuration(value);
  if (ms === undefined || ms < 1000 || ms > 3_600_000)
    throw new UsageError(`--wake-timeout must be a duration from 1s to 1h, like 30s or 2m (got "${value}")`);
  return ms;
}

/** `-l k=v`, repeated. */
export function labels(values: string[] | undefined): string[] {
  for (const v of values ?? []) {
    if (!/^[^=]+=.*$/.test(v)) throw new UsageError(`--label must be key=value (got "${v}")`);
  }
  return values ?? [];
}

/** `HOST:PORT` or `[V6]:PORT`; port 0 picks a free one. */
export function hostPort(flag: string, value: string): HostPort {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(value);
  if (!m?.[1] || Number(m[2]) > 65535)
    throw new UsageError(`--${flag} must be HOST:PORT, e.g. 127.0.0.1:8899 (got "${value}")`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

/** `--ban-on 403,429`: HTTP statuses 100–599. */
export function statuses(value: string | undefined): number[] {
  if (value === undefined) return [];
  return value.split(',').map((s) => {
    const n = Number(s.trim());
    if (!/^\d{3}$/.test(s.trim()) || n < 100 || n > 599)
      throw new UsageError(`--ban-on must be HTTP statuses separated by commas, e.g. 403,429 (got "${s}")`);
    return n;
  });
}

/** A domain flag (`--for`, `--target`) as discovery and reports key it: lower case, no trailing dot. */
export function hostName(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const host = normaliseTarget(value);
  if (host === undefined)
    throw new UsageError(
      `--${flag} must be a host name like example.com, without scheme, port or path (got "${value}")`,
    );
  return host;
}

/**
 * A proxy's or pool's name operand.
 *
 * @param usage - the verb's synopsis, shown when the name is missing
 */
export function proxyName(value: string | undefined, usage: string, what = 'proxy'): string {
  if (value === undefined) throw new UsageError(`missing ${what} name: ${usage}`);
  const parsed = dnsLabel.safeParse(value);
  if (!parsed.success) throw new UsageError(`invalid ${what} name "${value}": ${parsed.error.issues[0]?.message}`);
  return value;
}

/** `--config` and the fleet as `-f FLEET...` or `--proxies N [--provider P]` (cost, doctor). */
export function fleetFlags(values: Pick<FlagValues, 'config' | 'filename' | 'proxies' | 'provider'>): {
  config: string;
  files: string[];
  proxies?: number;
  provider?: string;
} {
  if (values.config === undefined) throw new UsageError('missing --config CONFIG (the providers config)');
  const files = values.filename ?? [];
  const proxies = positiveInt('proxies', values.proxies);
  if (files.length > 0 === (proxies !== undefined))
    throw new UsageError('give the fleet as -f FLEET.yaml or as --proxies N, one of the two');
  if (values.provider !== undefined && proxies === undefined)
    throw new UsageError('--provider goes with --proxies (a fleet file names its providers)');
  return {
    config: values.config,
    files,
    ...(proxies !== undefined && { proxies }),
    ...(values.provider !== undefined && { provider: values.provider }),
  };
}

/** `--functions-range CIDR`: an IPv4 range. */
export function ipv4Cidr(flag: string, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const cidr = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(value);
  if (!cidr || cidr.slice(1, 5).some((o) => Number(o) > 255) || Number(cidr[5]) > 32)
    throw new UsageError(`--${flag} must be an IPv4 CIDR range like 10.8.0.0/28 (got "${value}")`);
  return value;
}

/** `--socks-no-auth 127.0.0.1,::1`: loopback addresses only (anyone else must present the credentials). */
export function loopbackAddresses(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value.split(',').map((raw) => {
    const address = raw.trim();
    if (!isLoopbackAddress(address))
      throw new UsageError(`--socks-no-auth must be loopback addresses such as 127.0.0.1 or ::1 (got "${raw}")`);
    return address;
  });
}
