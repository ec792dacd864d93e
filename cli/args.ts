/** The `egress` command line (interfaces.md §4) parsed into a typed command; mistakes are usage errors (exit 2). */
import { parseArgs } from 'node:util';
import { parseDuration } from '../shared/domain/duration.js';
import { dnsLabel } from '../shared/domain/names.js';
import { normaliseTarget, REPORT_REASONS, type ReportReason } from '../shared/domain/reports.js';
import { PHASES, type Phase } from '../shared/domain/status.js';

/** A mistake on the command line: unknown verb or flag, missing argument, bad flag value (exit 2). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** `-o` of the `get` verbs. */
export const GET_OUTPUTS = ['table', 'wide', 'json', 'yaml'] as const;
export type GetOutput = (typeof GET_OUTPUTS)[number];
/** `-o` of `discover`. */
export const DISCOVER_OUTPUTS = ['urls', 'json'] as const;
export type DiscoverOutput = (typeof DISCOVER_OUTPUTS)[number];

/** What the user asked for. */
export type Command =
  | { verb: 'help' }
  | { verb: 'apply'; files: string[]; wait: boolean; timeoutMs: number }
  | { verb: 'get-proxies'; output: GetOutput; provider?: string; phase?: Phase; labels: string[]; watch: boolean }
  | { verb: 'get-proxy'; name: string; output: GetOutput }
  | { verb: 'get-providers'; output: GetOutput }
  | { verb: 'describe-proxy'; name: string }
  | { verb: 'delete-proxy'; names: string[]; wait: boolean; timeoutMs: number }
  | { verb: 'get-pools'; output: GetOutput }
  | { verb: 'get-pool'; name: string; output: GetOutput }
  | { verb: 'describe-pool'; name: string }
  | { verb: 'delete-pool'; name: string; wait: boolean; timeoutMs: number }
  | { verb: 'scale-pool'; name: string; replicas: number; wait: boolean; timeoutMs: number }
  | { verb: 'report-proxy'; name: string; reason: ReportReason; target?: string; detail?: string }
  | {
      verb: 'discover';
      output: DiscoverOutput;
      provider?: string;
      /** Only members of this pool (`?pool=`). */
      pool?: string;
      /** Leave out proxies reported for this domain (`?for=`). */
      forDomain?: string;
      labels: string[];
      maxLatencyMs?: number;
      distinct: boolean;
      limit?: number;
      random: boolean;
    }
  | {
      verb: 'gateway';
      listen: HostPort;
      pool?: string;
      provider?: string;
      labels: string[];
      banOn: number[];
      metrics?: HostPort;
    };

/** `--listen` / `--metrics`: where to listen. */
export interface HostPort {
  host: string;
  port: number;
}

/** Every flag of every verb; each verb then accepts only its own (see `FLAGS_BY_VERB`). */
const OPTIONS = {
  filename: { type: 'string', short: 'f', multiple: true },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
  output: { type: 'string', short: 'o' },
  provider: { type: 'string' },
  phase: { type: 'string' },
  label: { type: 'string', short: 'l', multiple: true },
  watch: { type: 'boolean', short: 'w' },
  'max-latency-ms': { type: 'string' },
  distinct: { type: 'boolean' },
  limit: { type: 'string' },
  random: { type: 'boolean' },
  replicas: { type: 'string' },
  listen: { type: 'string' },
  pool: { type: 'string' },
  'ban-on': { type: 'string' },
  metrics: { type: 'string' },
  reason: { type: 'string' },
  target: { type: 'string' },
  for: { type: 'string' },
  detail: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;
type Flag = keyof typeof OPTIONS;

const FLAGS_BY_VERB: Record<string, readonly Flag[]> = {
  apply: ['filename', 'wait', 'timeout'],
  'get proxies': ['output', 'provider', 'phase', 'label', 'watch'],
  'get proxy': ['output'],
  'get providers': ['output'],
  'describe proxy': [],
  'delete proxy': ['wait', 'timeout'],
  'get pools': ['output'],
  'get pool': ['output'],
  'describe pool': [],
  'delete pool': ['wait', 'timeout'],
  'scale pool': ['replicas', 'wait', 'timeout'],
  'report proxy': ['reason', 'target', 'detail'],
  discover: ['output', 'provider', 'pool', 'for', 'label', 'max-latency-ms', 'distinct', 'limit', 'random'],
  gateway: ['listen', 'pool', 'label', 'provider', 'ban-on', 'metrics'],
};

/** The help text (`egress --help`). */
export const USAGE = `Usage: egress <command> [flags]

Commands:
  apply -f FILE [--wait] [--timeout 5m]      create or update the proxies in FILE (YAML, several documents; - for stdin)
  get proxies [-o table|wide|json|yaml] [--provider P] [--phase PH] [-l k=v] [-w]
                                             list proxies; -w watches for changes until Ctrl-C
  get proxy NAME [-o table|wide|json|yaml]   show one proxy
  describe proxy NAME                        a proxy's status, conditions and recent events
  delete proxy NAME... [--wait] [--timeout 5m]
                                             delete proxies; --wait returns when they are gone
  report proxy NAME --reason banned|blocked|error [--target example.com] [--detail TEXT]
                                             feedback from traffic: banned without a target replaces the proxy;
                                             with a target, discovery for that domain leaves it out for a while
  get providers [-o table|wide|json|yaml]    provider health
  get pools [-o table|json|yaml]             list pools: members, Ready, spread
  get pool NAME [-o table|json|yaml]         show one pool
  describe pool NAME                         a pool's members by spread entry, conditions and events
  delete pool NAME [--wait] [--timeout 5m]   delete a pool and its members; --wait returns when gone
  scale pool NAME --replicas N [--wait] [--timeout 5m]
                                             set a pool's replicas; --wait returns when N are Ready
  discover [-o urls|json] [--provider P] [--pool P] [--for DOMAIN] [-l k=v] [--max-latency-ms N] [--distinct] [--limit N] [--random]
                                             Ready proxies as URLs usable with curl -x; --for leaves out
                                             those reported for that domain
  gateway [--listen 127.0.0.1:8899] [--pool P] [-l k=v] [--provider P] [--ban-on 403,429] [--metrics 127.0.0.1:PORT]
                                             one local authenticated proxy in front of the fleet: prints its
                                             URL, rotates, keeps USER-session-<id> sessions, retries failures;
                                             credentials from EGRESS_GATEWAY_USER/EGRESS_GATEWAY_PASSWORD or random

The API is EGRESS_API_URL with the bearer token EGRESS_TOKEN; when unset, both are read from
local.env in EGRESS_HOME, or in .egress/ of the current directory or a parent (written by npm start).
Exit codes: 0 success, 1 failure, 2 usage error.
`;

const RESOURCES: Record<string, 'proxy' | 'provider' | 'pool'> = {
  proxy: 'proxy',
  proxies: 'proxy',
  provider: 'provider',
  providers: 'provider',
  pool: 'pool',
  pools: 'pool',
};

/** Node's parseArgs messages are long; keep the part that names the flag. */
function usageFromParseError(err: unknown): UsageError {
  const code = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  const message = err instanceof Error ? err.message : String(err);
  const flag = /'([^']+)'/.exec(message)?.[1] ?? message;
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return new UsageError(`unknown flag: ${flag}`);
  if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
    if (message.includes('does not take an argument')) return new UsageError(`flag ${flag} takes no value`);
    return new UsageError(`flag ${flag.replace(/ <value>$/, '')} needs a value`);
  }
  return new UsageError(message);
}

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

function proxyName(value: string | undefined, usage: string, what = 'proxy'): string {
  if (value === undefined) throw new UsageError(`missing ${what} name: ${usage}`);
  const parsed = dnsLabel.safeParse(value);
  if (!parsed.success) throw new UsageError(`invalid ${what} name "${value}": ${parsed.error.issues[0]?.message}`);
  return value;
}

/**
 * Parses the arguments after `egress`.
 *
 * @param argv - e.g. `['get', 'proxies', '-o', 'wide']`
 * @returns the command
 * @throws UsageError for an unknown verb or flag, a missing argument or a bad flag value
 */
export function parseCommand(argv: readonly string[]): Command {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    throw usageFromParseError(err);
  }
  const { values, positionals } = parsed;
  const [verb, resourceWord, ...rest] = positionals;
  if (values.help || verb === 'help') return { verb: 'help' };
  if (verb === undefined) throw new UsageError('missing command');

  const resource = resourceWord === undefined ? undefined : RESOURCES[resourceWord];
  let key: string;
  if (verb === 'apply' || verb === 'discover' || verb === 'gateway') {
    if (resourceWord !== undefined) throw new UsageError(`unexpected argument "${resourceWord}" for ${verb}`);
    key = verb;
  } else if (verb === 'report') {
    if (resourceWord === undefined) throw new UsageError('missing resource: egress report proxy NAME --reason R');
    if (resource !== 'proxy') throw new UsageError(`unknown resource "${resourceWord}" for report`);
    key = 'report proxy';
  } else if (verb === 'get' || verb === 'describe' || verb === 'delete') {
    if (resourceWord === undefined)
      throw new UsageError(`missing resource: egress ${verb} proxy|proxies|providers|pool|pools`);
    if (!resource || (resource === 'provider' && verb !== 'get'))
      throw new UsageError(`unknown resource "${resourceWord}" for ${verb}`);
    const plural = resource === 'pool' ? 'pools' : 'proxies';
    key =
      resource === 'provider'
        ? 'get providers'
        : verb === 'get' && rest.length === 0
          ? `get ${plural}`
          : `${verb} ${resource}`;
  } else if (verb === 'scale') {
    if (resource !== 'pool') throw new UsageError('usage: egress scale pool NAME --replicas N');
    key = 'scale pool';
  } else {
    throw new UsageError(`unknown command "${verb}"`);
  }

  const allowed = FLAGS_BY_VERB[key] ?? [];
  for (const flag of Object.keys(values)) {
    if (!allowed.some((a) => a === flag)) throw new UsageError(`unknown flag --${flag} for "egress ${key}"`);
  }
  const single = [
    'get proxy',
    'describe proxy',
    'report proxy',
    'get pool',
    'describe pool',
    'delete pool',
    'scale pool',
  ];
  const maxArgs = key === 'delete proxy' ? Infinity : single.includes(key) ? 1 : 0;
  if (rest.length > maxArgs) throw new UsageError(`unexpected argument "${String(rest[maxArgs])}"`);

  switch (key) {
    case 'apply': {
      const files = values.filename ?? [];
      if (files.length === 0) throw new UsageError('missing -f FILE');
      return { verb: 'apply', files, wait: values.wait ?? false, timeoutMs: timeout(values.timeout) };
    }
    case 'get proxies':
      return {
        verb: 'get-proxies',
        output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
        ...(values.provider !== undefined && { provider: values.provider }),
        ...(values.phase !== undefined && { phase: oneOf('phase', values.phase, PHASES, 'Ready') }),
        labels: labels(values.label),
        watch: values.watch ?? false,
      };
    case 'get proxy':
      return {
        verb: 'get-proxy',
        name: proxyName(rest[0], 'egress get proxy NAME'),
        output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
      };
    case 'get providers':
      return { verb: 'get-providers', output: oneOf('output', values.output, GET_OUTPUTS, 'table') };
    case 'describe proxy':
      return { verb: 'describe-proxy', name: proxyName(rest[0], 'egress describe proxy NAME') };
    case 'delete proxy': {
      if (rest.length === 0) throw new UsageError('missing proxy name: egress delete proxy NAME');
      const names = rest.map((n) => proxyName(n, 'egress delete proxy NAME'));
      return { verb: 'delete-proxy', names, wait: values.wait ?? false, timeoutMs: timeout(values.timeout) };
    }
    case 'get pools':
      return { verb: 'get-pools', output: oneOf('output', values.output, GET_OUTPUTS, 'table') };
    case 'get pool':
      return {
        verb: 'get-pool',
        name: proxyName(rest[0], 'egress get pool NAME', 'pool'),
        output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
      };
    case 'describe pool':
      return { verb: 'describe-pool', name: proxyName(rest[0], 'egress describe pool NAME', 'pool') };
    case 'delete pool':
      return {
        verb: 'delete-pool',
        name: proxyName(rest[0], 'egress delete pool NAME', 'pool'),
        wait: values.wait ?? false,
        timeoutMs: timeout(values.timeout),
      };
    case 'scale pool': {
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
    }
    case 'gateway': {
      const metrics = values.metrics === undefined ? undefined : hostPort('metrics', values.metrics);
      return {
        verb: 'gateway',
        listen: hostPort('listen', values.listen ?? '127.0.0.1:8899'),
        ...(values.pool !== undefined && { pool: values.pool }),
        ...(values.provider !== undefined && { provider: values.provider }),
        labels: labels(values.label),
        banOn: statuses(values['ban-on']),
        ...(metrics && { metrics }),
      };
    }
    case 'report proxy':
      return reportCommand(rest[0], values);
    default: {
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
    }
  }
}

/** `egress report proxy NAME --reason R [--target D] [--detail T]`. */
function reportCommand(
  name: string | undefined,
  values: { reason?: string | undefined; target?: string | undefined; detail?: string | undefined },
): Command {
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
