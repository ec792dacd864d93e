/** Building each `egress` command from its arguments and flags: the flag values checked, naming the flag. */
import { parseDuration } from '../shared/domain/duration.js';
import { isLoopbackAddress } from '../shared/domain/hosts.js';
import { dnsLabel } from '../shared/domain/names.js';
import { normaliseTarget, REPORT_REASONS } from '../shared/domain/reports.js';
import { PHASES } from '../shared/domain/status.js';
import { DISCOVER_OUTPUTS, GET_OUTPUTS, UsageError, type Command, type FlagValues, type HostPort } from './command.js';

function oneOf<T extends string>(flag: string, value: string | undefined, allowed: readonly T[], fallback: T): T {
  if (value === undefined) return fallback;
  const found = allowed.find((a) => a === value);
  if (!found) throw new UsageError(`--${flag} must be one of ${allowed.join(', ')} (got "${value}")`);
  return found;
}

function positiveInt(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError(`--${flag} must be a positive integer`);
  return Number(value);
}

function timeout(value: string | undefined): number {
  if (value === undefined) return 5 * 60_000;
  const ms = parseDuration(value);
  if (ms === undefined || ms <= 0) throw new UsageError(`--timeout must be a duration like 90s, 5m or 1h`);
  return ms;
}

function labels(values: string[] | undefined): string[] {
  for (const v of values ?? []) {
    if (!/^[^=]+=.*$/.test(v)) throw new UsageError(`--label must be key=value (got "${v}")`);
  }
  return values ?? [];
}

/** `HOST:PORT` or `[V6]:PORT`; port 0 picks a free one. */
function hostPort(flag: string, value: string): HostPort {
  const m = /^(\[[0-9A-Fa-f:.]+\]|[^\s:[\]]+):(\d{1,5})$/.exec(value);
  if (!m?.[1] || Number(m[2]) > 65535)
    throw new UsageError(`--${flag} must be HOST:PORT, e.g. 127.0.0.1:8899 (got "${value}")`);
  return { host: m[1].replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

/** `--ban-on 403,429`: HTTP statuses 100–599. */
function statuses(value: string | undefined): number[] {
  if (value === undefined) return [];
  return value.split(',').map((s) => {
    const n = Number(s.trim());
    if (!/^\d{3}$/.test(s.trim()) || n < 100 || n > 599)
      throw new UsageError(`--ban-on must be HTTP statuses separated by commas, e.g. 403,429 (got "${s}")`);
    return n;
  });
}

/** `--socks-no-auth 127.0.0.1,::1`: loopback addresses only (anyone else must present the credentials). */
function loopbackAddresses(value: string | undefined): string[] {
  if (value === undefined) return [];
  return value.split(',').map((raw) => {
    const address = raw.trim();
    if (!isLoopbackAddress(address))
      throw new UsageError(`--socks-no-auth must be loopback addresses such as 127.0.0.1 or ::1 (got "${raw}")`);
    return address;
  });
}

export function proxyName(value: string | undefined, usage: string, what = 'proxy'): string {
  if (value === undefined) throw new UsageError(`missing ${what} name: ${usage}`);
  const parsed = dnsLabel.safeParse(value);
  if (!parsed.success) throw new UsageError(`invalid ${what} name "${value}": ${parsed.error.issues[0]?.message}`);
  return value;
}

/** `--config` and the fleet as `-f FLEET...` or `--proxies N [--provider P]` (cost, doctor). */
function fleetFlags(values: FlagValues): { config: string; files: string[]; proxies?: number; provider?: string } {
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

/**
 * The command each `verb resource` key builds from its arguments and flag values (flags were
 * already checked against the key's own).
 */
const BUILDERS: Record<string, (rest: readonly string[], values: FlagValues) => Command> = {
  apply: (rest, values) => {
    const files = values.filename ?? [];
    if (files.length === 0) throw new UsageError('missing -f FILE');
    return { verb: 'apply', files, wait: values.wait ?? false, timeoutMs: timeout(values.timeout) };
  },
  'get proxies': (rest, values) => ({
    verb: 'get-proxies',
    output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
    ...(values.provider !== undefined && { provider: values.provider }),
    ...(values.phase !== undefined && { phase: oneOf('phase', values.phase, PHASES, 'Ready') }),
    labels: labels(values.label),
    watch: values.watch ?? false,
  }),
  'get proxy': (rest, values) => ({
    verb: 'get-proxy',
    name: proxyName(rest[0], 'egress get proxy NAME'),
    output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
  }),
  'get providers': (rest, values) => ({
    verb: 'get-providers',
    output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
  }),
  'describe proxy': (rest) => ({
    verb: 'describe-proxy',
    name: proxyName(rest[0], 'egress describe proxy NAME'),
  }),
  'delete proxy': (rest, values) => {
    if (rest.length === 0) throw new UsageError('missing proxy name: egress delete proxy NAME');
    const names = rest.map((n) => proxyName(n, 'egress delete proxy NAME'));
    return { verb: 'delete-proxy', names, wait: values.wait ?? false, timeoutMs: timeout(values.timeout) };
  },
  'get pools': (rest, values) => ({ verb: 'get-pools', output: oneOf('output', values.output, GET_OUTPUTS, 'table') }),
  'get pool': (rest, values) => ({
    verb: 'get-pool',
    name: proxyName(rest[0], 'egress get pool NAME', 'pool'),
    output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
  }),
  'describe pool': (rest) => ({
    verb: 'describe-pool',
    name: proxyName(rest[0], 'egress describe pool NAME', 'pool'),
  }),
  'delete pool': (rest, values) => ({
    verb: 'delete-pool',
    name: proxyName(rest[0], 'egress delete pool NAME', 'pool'),
    wait: values.wait ?? false,
    timeoutMs: timeout(values.timeout),
  }),
  'scale pool': (rest, values) => {
    const name = proxyName(rest[0], 'egress scale pool NAME --replicas N', 'pool');
    const raw = values.replicas;
    if (raw === undefined) throw new UsageError('missing --replicas N');
    if (!/^\d+$/.test(raw)) throw new UsageError('--replicas must be a whole number (0 or more)');
    return {
      verb: 'scale-pool',
      name,
      replicas: Number(raw),
      wait: values.wait ?? false,
      timeoutMs: timeout(values.timeout),
    };
  },
  gateway: (rest, values) => {
    const metrics = values.metrics === undefined ? undefined : hostPort('metrics', values.metrics);
    return {
      verb: 'gateway',
      listen: hostPort('listen', values.listen ?? '127.0.0.1:8899'),
      ...(values.pool !== undefined && { pool: values.pool }),
      ...(values.provider !== undefined && { provider: values.provider }),
      labels: labels(values.label),
      banOn: statuses(values['ban-on']),
      ...(metrics && { metrics }),
      socksNoAuthFrom: loopbackAddresses(values['socks-no-auth']),
    };
  },
  'report proxy': (rest, values) => reportCommand(rest[0], values),
  cost: (rest, values) => {
    const fleet = fleetFlags(values);
    const raw = values['egress-gb'] ?? '0';
    if (!/^\d+(\.\d+)?$/.test(raw)) throw new UsageError(`--egress-gb must be a number of GB a month (got "${raw}")`);
    return { verb: 'cost', ...fleet, egressGib: Number(raw) };
  },
  doctor: (rest, values) => {
    const range = values['functions-range'];
    const cidr =
      range === undefined ? undefined : /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(range);
    if (range !== undefined && (!cidr || cidr.slice(1, 5).some((o) => Number(o) > 255) || Number(cidr[5]) > 32))
      throw new UsageError(`--functions-range must be an IPv4 CIDR range like 10.8.0.0/28 (got "${range}")`);
    return {
      verb: 'doctor',
      ...fleetFlags(values),
      infra: values.infra ?? 'infra',
      apiPublic: values['api-public'] ?? false,
      ...(range !== undefined && { functionsRange: range }),
    };
  },
  discover: (rest, values) => {
    const maxLatencyMs = positiveInt('max-latency-ms', values['max-latency-ms']);
    const limit = positiveInt('limit', values.limit);
    const forDomain = values.for === undefined ? undefined : normaliseTarget(values.for);
    if (values.for !== undefined && forDomain === undefined)
      throw new UsageError(
        `--for must be a host name like example.com, without scheme, port or path (got "${values.for}")`,
      );
    return {
      verb: 'discover',
      output: oneOf('output', values.output, DISCOVER_OUTPUTS, 'urls'),
      ...(values.provider !== undefined && { provider: values.provider }),
      ...(values.pool !== undefined && { pool: proxyName(values.pool, 'egress discover --pool NAME', 'pool') }),
      ...(forDomain !== undefined && { forDomain }),
      labels: labels(values.label),
      ...(maxLatencyMs !== undefined && { maxLatencyMs }),
      distinct: values.distinct ?? false,
      ...(limit !== undefined && { limit }),
      random: values.random ?? false,
    };
  },
};

/**
 * @param key - the `verb resource` key parseCommand resolved
 * @returns the command, its flag values checked
 * @throws UsageError for a bad flag value or argument
 */
export function buildCommand(key: string, rest: readonly string[], values: FlagValues): Command {
  const build = BUILDERS[key];
  if (!build) throw new UsageError(`unknown command "${key}"`);
  return build(rest, values);
}

/** `egress report proxy NAME --reason R [--target D] [--detail T]`. */
function reportCommand(name: string | undefined, values: FlagValues): Command {
  const usage = 'egress report proxy NAME --reason banned|blocked|error';
  const proxy = proxyName(name, usage);
  if (values.reason === undefined) throw new UsageError(`missing --reason: ${usage}`);
  const reason = oneOf('reason', values.reason, REPORT_REASONS, 'banned');
  const target = values.target === undefined ? undefined : normaliseTarget(values.target);
  if (values.target !== undefined && target === undefined)
    throw new UsageError(
      `--target must be a host name like example.com, without scheme, port or path (got "${values.target}")`,
    );
  if (values.detail !== undefined && values.detail.length > 1024)
    throw new UsageError('--detail must be at most 1024 characters');
  return {
    verb: 'report-proxy',
    name: proxy,
    reason,
    ...(target !== undefined && { target }),
    ...(values.detail !== undefined && { detail: values.detail }),
  };
}
