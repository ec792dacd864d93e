/** The `egress` command line (interfaces.md §4) parsed into a typed command; mistakes are usage errors (exit 2). */
import { parseArgs } from 'node:util';
import { OPTIONS, UsageError, type Command, type Flag } from './command.js';
import { buildCommand } from './command-builders.js';

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
  gateway: ['listen', 'pool', 'label', 'provider', 'ban-on', 'metrics', 'socks-no-auth'],
  cost: ['config', 'filename', 'proxies', 'provider', 'egress-gb'],
  doctor: ['config', 'filename', 'proxies', 'provider', 'infra', 'api-public', 'functions-range'],
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
  gateway [--listen 127.0.0.1:8899] [--pool P] [-l k=v] [--provider P] [--ban-on 403,429] [--metrics 127.0.0.1:PORT] [--socks-no-auth 127.0.0.1]
                                             one local authenticated HTTP and SOCKS5 proxy in front of the fleet:
                                             prints its URL, learns which proxies each domain accepts, steers by
                                             USER-session-<id>-country-<cc>-… (docs/gateway.md), retries failures;
                                             credentials from EGRESS_GATEWAY_USER/EGRESS_GATEWAY_PASSWORD or random
  cost --config CONFIG (-f FLEET... | --proxies N [--provider P]) [--egress-gb GB]
                                             the monthly estimate of a fleet: VMs, external IPv4, disks, Internet
                                             egress (GB a month, whole fleet) at the dated catalogue's list prices,
                                             and the control plane as the bench measured it; needs no API
  doctor --config CONFIG (-f FLEET... | --proxies N [--provider P]) [--infra infra] [--functions-range CIDR] [--api-public]
                                             preflight of the project before terraform apply (Application Default
                                             Credentials): APIs, organisation policies, network, quotas, the
                                             firewall path to the proxy port, relay subscriptions and keys; prints
                                             each finding with the command that fixes it; exit 1 on findings

The API is EGRESS_API_URL with the bearer token EGRESS_TOKEN; when unset, both are read from
local.env in EGRESS_HOME, or in .egress/ of the current directory or a parent (written by npm start).
Behind Cloud Run IAM a Google ID token from Application Default Credentials goes along:
EGRESS_API_AUTH=auto|google|none (auto: only to *.run.app and *.cloudfunctions.net URLs),
EGRESS_API_AUDIENCE (default: the service URL), EGRESS_ID_TOKEN (a token to send as it is).
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

/** The `verb resource` key of a command line (`get proxies`, `scale pool`, `discover`). */
function commandKey(verb: string, resourceWord: string | undefined, rest: readonly string[]): string {
  const resource = resourceWord === undefined ? undefined : RESOURCES[resourceWord];
  if (verb === 'apply' || verb === 'discover' || verb === 'gateway' || verb === 'cost' || verb === 'doctor') {
    if (resourceWord !== undefined) throw new UsageError(`unexpected argument "${resourceWord}" for ${verb}`);
    return verb;
  } else if (verb === 'report') {
    if (resourceWord === undefined) throw new UsageError('missing resource: egress report proxy NAME --reason R');
    if (resource !== 'proxy') throw new UsageError(`unknown resource "${resourceWord}" for report`);
    return 'report proxy';
  } else if (verb === 'get' || verb === 'describe' || verb === 'delete') {
    if (resourceWord === undefined)
      throw new UsageError(`missing resource: egress ${verb} proxy|proxies|providers|pool|pools`);
    if (!resource || (resource === 'provider' && verb !== 'get'))
      throw new UsageError(`unknown resource "${resourceWord}" for ${verb}`);
    const plural = resource === 'pool' ? 'pools' : 'proxies';
    return resource === 'provider'
      ? 'get providers'
      : verb === 'get' && rest.length === 0
        ? `get ${plural}`
        : `${verb} ${resource}`;
  } else if (verb === 'scale') {
    if (resource !== 'pool') throw new UsageError('usage: egress scale pool NAME --replicas N');
    return 'scale pool';
  }
  throw new UsageError(`unknown command "${verb}"`);
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

  const key = commandKey(verb, resourceWord, rest);
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

  return buildCommand(key, rest, values);
}
