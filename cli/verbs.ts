/**
 * The `egress` verbs, one definition each: its help line, the flags and operands it takes, how its
 * command is built from them and how it runs. Parsing and help (args.ts) and dispatch (run.ts)
 * follow from this table, and the compiler holds it to exactly one definition per id of
 * `CommandShapes` (command.ts) whose `build` returns that shape and whose `run` takes it.
 *
 * A flag for a verb: list it in the verb's `flags` (a new name also gets its line in `OPTIONS`,
 * command.ts); `build` can read only the flags listed. A new verb: its shape in `CommandShapes`
 * and its definition here; its words (`get proxies`) come from its id (`get-proxies`).
 */
import { REPORT_REASONS } from '../shared/domain/reports.js';
import { PHASES } from '../shared/domain/status.js';
import type { ApiClient } from './api-client.js';
import {
  DISCOVER_OUTPUTS,
  GET_OUTPUTS,
  UsageError,
  type Command,
  type CommandShapes,
  type Flag,
  type FlagValues,
  type VerbId,
} from './command.js';
import * as api from './commands.js';
import type { Io } from './commands.js';
import type { CliConfig } from './config.js';
import { runCost } from './cost.js';
import { COUNTRY_CODE_RULE, countryCode } from '../shared/domain/country.js';
import { runDoctor } from './doctor/index.js';
import {
  fleetFlags,
  hostName,
  hostPort,
  ipv4Cidr,
  labels,
  loopbackAddresses,
  oneOf,
  positiveInt,
  proxyName,
  statuses,
  timeout,
  wakeTimeout,
} from './flag-values.js';
import { runGateway } from './gateway.js';

/** What a verb runs with: the process, and the API config and client, made only when a verb asks for them. */
export interface VerbContext {
  io: Io;
  config: () => CliConfig;
  client: () => ApiClient;
}

/** One verb: `K` its id, `F` the flags it takes. */
export interface VerbDefinition<K extends VerbId, F extends Flag = Flag> {
  /** Its words and flags as the help shows them, after `egress `. */
  synopsis: string;
  /** What it does, one help line each. */
  help: readonly string[];
  flags: readonly F[];
  /** Its operands after the verb's words: none, one NAME, or NAME... */
  operands: 'none' | 'one' | 'many';
  /**
   * @param operands - the words after the verb's own (at most as many as `operands` allows)
   * @throws UsageError naming the flag or operand that is wrong
   */
  build(operands: readonly string[], values: Pick<FlagValues, F>): CommandShapes[K];
  /** @returns the exit code when it is not 0 */
  run(cmd: Command<K>, context: VerbContext): Promise<number | void>;
}

/** A definition, with `F` taken from its `flags` so that `build` sees only those. */
export function verb<K extends VerbId, const F extends Flag>(definition: VerbDefinition<K, F>): VerbDefinition<K, F> {
  return definition;
}

const OUTPUT = 'table|wide|json|yaml';

/** Every verb, in the order the help lists them. */
export const VERBS: { [K in VerbId]: VerbDefinition<K> } = {
  apply: verb({
    synopsis: 'apply -f FILE [--wait] [--timeout 5m]',
    help: ['create or update the proxies in FILE (YAML, several documents; - for stdin)'],
    flags: ['filename', 'wait', 'timeout'],
    operands: 'none',
    build: (_, values) => {
      const files = values.filename ?? [];
      if (files.length === 0) throw new UsageError('missing -f FILE');
      return { files, wait: values.wait ?? false, timeoutMs: timeout(values.timeout) };
    },
    run: (cmd, { client, io }) => api.apply(client(), io, cmd),
  }),
  'get-proxies': verb({
    synopsis: `get proxies [-o ${OUTPUT}] [--provider P] [--phase PH] [-l k=v] [-w]`,
    help: ['list proxies; -w watches for changes until Ctrl-C'],
    flags: ['output', 'provider', 'phase', 'label', 'watch'],
    operands: 'none',
    build: (_, values) => ({
      output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
      ...(values.provider !== undefined && { provider: values.provider }),
      ...(values.phase !== undefined && { phase: oneOf('phase', values.phase, PHASES, 'Ready') }),
      labels: labels(values.label),
      watch: values.watch ?? false,
    }),
    run: (cmd, { client, io }) => api.getProxies(client(), io, cmd),
  }),
  'get-proxy': verb({
    synopsis: `get proxy NAME [-o ${OUTPUT}]`,
    help: ['show one proxy'],
    flags: ['output'],
    operands: 'one',
    build: ([name], values) => ({
      name: proxyName(name, 'egress get proxy NAME'),
      output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
    }),
    run: (cmd, { client, io }) => api.getProxy(client(), io, cmd),
  }),
  'describe-proxy': verb({
    synopsis: 'describe proxy NAME',
    help: ["a proxy's status, conditions and recent events"],
    flags: [],
    operands: 'one',
    build: ([name]) => ({ name: proxyName(name, 'egress describe proxy NAME') }),
    run: (cmd, { client, io }) => api.getProxy(client(), io, cmd),
  }),
  'delete-proxy': verb({
    synopsis: 'delete proxy NAME... [--wait] [--timeout 5m]',
    help: ['delete proxies; --wait returns when they are gone'],
    flags: ['wait', 'timeout'],
    operands: 'many',
    build: (names, values) => {
      if (names.length === 0) throw new UsageError('missing proxy name: egress delete proxy NAME');
      return {
        names: names.map((n) => proxyName(n, 'egress delete proxy NAME')),
        wait: values.wait ?? false,
        timeoutMs: timeout(values.timeout),
      };
    },
    run: (cmd, { client, io }) => api.deleteProxies(client(), io, cmd),
  }),
  'report-proxy': verb({
    synopsis: 'report proxy NAME --reason banned|blocked|error [--target example.com] [--detail TEXT]',
    help: [
      'feedback from traffic: banned without a target replaces the proxy;',
      'with a target, discovery for that domain leaves it out for a while',
    ],
    flags: ['reason', 'target', 'detail'],
    operands: 'one',
    build: ([name], values) => {
      const usage = 'egress report proxy NAME --reason banned|blocked|error';
      const proxy = proxyName(name, usage);
      if (values.reason === undefined) throw new UsageError(`missing --reason: ${usage}`);
      const reason = oneOf('reason', values.reason, REPORT_REASONS, 'banned');
      const target = hostName('target', values.target);
      if (values.detail !== undefined && values.detail.length > 1024)
        throw new UsageError('--detail must be at most 1024 characters');
      return {
        name: proxy,
        reason,
        ...(target !== undefined && { target }),
        ...(values.detail !== undefined && { detail: values.detail }),
      };
    },
    run: (cmd, { client, io }) => api.reportProxy(client(), io, cmd),
  }),
  'get-providers': verb({
    synopsis: `get providers [-o ${OUTPUT}]`,
    help: ['provider health'],
    flags: ['output'],
    operands: 'none',
    build: (_, values) => ({ output: oneOf('output', values.output, GET_OUTPUTS, 'table') }),
    run: (cmd, { client, io }) => api.getProviders(client(), io, cmd),
  }),
  'get-pools': verb({
    synopsis: 'get pools [-o table|json|yaml]',
    help: ['list pools: members (live/desired), Ready, the demand an autoscaled pool sees, spread'],
    flags: ['output'],
    operands: 'none',
    build: (_, values) => ({ output: oneOf('output', values.output, GET_OUTPUTS, 'table') }),
    run: (cmd, { client, io }) => api.getPools(client(), io, cmd),
  }),
  'get-pool': verb({
    synopsis: 'get pool NAME [-o table|json|yaml]',
    help: ['show one pool'],
    flags: ['output'],
    operands: 'one',
    build: ([name], values) => ({
      name: proxyName(name, 'egress get pool NAME', 'pool'),
      output: oneOf('output', values.output, GET_OUTPUTS, 'table'),
    }),
    run: (cmd, { client, io }) => api.getPool(client(), io, cmd),
  }),
  'describe-pool': verb({
    synopsis: 'describe pool NAME',
    help: ["a pool's members by spread entry, conditions and events"],
    flags: [],
    operands: 'one',
    build: ([name]) => ({ name: proxyName(name, 'egress describe pool NAME', 'pool') }),
    run: (cmd, { client, io }) => api.getPool(client(), io, cmd),
  }),
  'delete-pool': verb({
    synopsis: 'delete pool NAME [--wait] [--timeout 5m]',
    help: ['delete a pool and its members; --wait returns when gone'],
    flags: ['wait', 'timeout'],
    operands: 'one',
    build: ([name], values) => ({
      name: proxyName(name, 'egress delete pool NAME', 'pool'),
      wait: values.wait ?? false,
      timeoutMs: timeout(values.timeout),
    }),
    run: (cmd, { client, io }) => api.deletePool(client(), io, cmd),
  }),
  'scale-pool': verb({
    synopsis: 'scale pool NAME --replicas N [--wait] [--timeout 5m]',
    help: ["set a pool's replicas; --wait returns when N are Ready"],
    flags: ['replicas', 'wait', 'timeout'],
    operands: 'one',
    build: ([pool], values) => {
      const name = proxyName(pool, 'egress scale pool NAME --replicas N', 'pool');
      const raw = values.replicas;
      if (raw === undefined) throw new UsageError('missing --replicas N');
      if (!/^\d+$/.test(raw)) throw new UsageError('--replicas must be a whole number (0 or more)');
      return { name, replicas: Number(raw), wait: values.wait ?? false, timeoutMs: timeout(values.timeout) };
    },
    run: (cmd, { client, io }) => api.scale(client(), io, cmd),
  }),
  discover: verb({
    synopsis:
      'discover [-o urls|json] [--provider P] [--pool P] [--for DOMAIN] [-l k=v] [--max-latency-ms N] [--country CC] [--asn N] [--distinct] [--limit N] [--random]',
    help: [
      'Ready proxies as URLs usable with curl -x; --for leaves out',
      'those reported for that domain; --country keeps proxies whose',
      'egress is located there and not flagged EgressVerified=False',
    ],
    flags: [
      'output',
      'provider',
      'pool',
      'for',
      'label',
      'max-latency-ms',
      'country',
      'asn',
      'distinct',
      'limit',
      'random',
    ],
    operands: 'none',
    build: (_, values) => {
      const maxLatencyMs = positiveInt('max-latency-ms', values['max-latency-ms']);
      const limit = positiveInt('limit', values.limit);
      const forDomain = hostName('for', values.for);
      const asn = positiveInt('asn', values.asn);
      const country = values.country === undefined ? undefined : countryCode(values.country);
      if (values.country !== undefined && country === undefined)
        throw new UsageError(`--country ${COUNTRY_CODE_RULE} (got "${values.country}")`);
      return {
        output: oneOf('output', values.output, DISCOVER_OUTPUTS, 'urls'),
        ...(values.provider !== undefined && { provider: values.provider }),
        ...(values.pool !== undefined && { pool: proxyName(values.pool, 'egress discover --pool NAME', 'pool') }),
        ...(forDomain !== undefined && { forDomain }),
        labels: labels(values.label),
        ...(maxLatencyMs !== undefined && { maxLatencyMs }),
        ...(country !== undefined && { country }),
        ...(asn !== undefined && { asn }),
        distinct: values.distinct ?? false,
        ...(limit !== undefined && { limit }),
        random: values.random ?? false,
      };
    },
    run: (cmd, { client, io }) => api.discover(client(), io, cmd),
  }),
  gateway: verb({
    synopsis:
      'gateway [--listen 127.0.0.1:8899] [--pool P] [-l k=v] [--provider P] [--ban-on 403,429] [--metrics 127.0.0.1:PORT] [--socks-no-auth 127.0.0.1] [--wake-timeout 120s]',
    help: [
      'one local authenticated HTTP and SOCKS5 proxy in front of the fleet:',
      'prints its URL, learns which proxies each domain accepts, steers by',
      'USER-session-<id>-country-<cc>-… (docs/gateway.md), retries failures;',
      'credentials from EGRESS_GATEWAY_USER/EGRESS_GATEWAY_PASSWORD or random;',
      'reports demand per pool; holds a request for a sleeping pool up to --wake-timeout',
    ],
    flags: ['listen', 'pool', 'label', 'provider', 'ban-on', 'metrics', 'socks-no-auth', 'wake-timeout'],
    operands: 'none',
    build: (_, values) => {
      const metrics = values.metrics === undefined ? undefined : hostPort('metrics', values.metrics);
      return {
        listen: hostPort('listen', values.listen ?? '127.0.0.1:8899'),
        ...(values.pool !== undefined && { pool: values.pool }),
        ...(values.provider !== undefined && { provider: values.provider }),
        labels: labels(values.label),
        banOn: statuses(values['ban-on']),
        ...(metrics && { metrics }),
        socksNoAuthFrom: loopbackAddresses(values['socks-no-auth']),
        wakeTimeoutMs: wakeTimeout(values['wake-timeout']),
      };
    },
    // Runs until Ctrl-C: the interrupt is how it ends, not a failure.
    run: (cmd, { config, io }) => runGateway(cmd, io, config()),
  }),
  cost: verb({
    synopsis: 'cost --config CONFIG (-f FLEET... | --proxies N [--provider P]) [--egress-gb GB]',
    help: [
      'the monthly estimate of a fleet: VMs, external IPv4, disks, Internet',
      "egress (GB a month, whole fleet) at the dated catalogue's list prices,",
      'and the control plane as the bench measured it; needs no API',
    ],
    flags: ['config', 'filename', 'proxies', 'provider', 'egress-gb'],
    operands: 'none',
    build: (_, values) => {
      const fleet = fleetFlags(values);
      const raw = values['egress-gb'] ?? '0';
      if (!/^\d+(\.\d+)?$/.test(raw)) throw new UsageError(`--egress-gb must be a number of GB a month (got "${raw}")`);
      return { ...fleet, egressGib: Number(raw) };
    },
    // Reads only local files: no API.
    run: (cmd, { io }) => Promise.resolve(runCost(io, cmd)),
  }),
  doctor: verb({
    synopsis:
      'doctor --config CONFIG (-f FLEET... | --proxies N [--provider P]) [--infra infra] [--functions-range CIDR] [--api-public]',
    help: [
      'preflight of the project before terraform apply (Application Default',
      'Credentials): APIs, organisation policies, network, quotas, the',
      'firewall path to the proxy port, relay subscriptions and keys; prints',
      'each finding with the command that fixes it; exit 1 on findings',
    ],
    flags: ['config', 'filename', 'proxies', 'provider', 'infra', 'api-public', 'functions-range'],
    operands: 'none',
    build: (_, values) => {
      const functionsRange = ipv4Cidr('functions-range', values['functions-range']);
      return {
        ...fleetFlags(values),
        infra: values.infra ?? 'infra',
        apiPublic: values['api-public'] ?? false,
        ...(functionsRange !== undefined && { functionsRange }),
      };
    },
    run: (cmd, { io }) => runDoctor(io, cmd),
  }),
};

/**
 * Runs a parsed command with its verb's definition.
 *
 * @returns the exit code when it is not 0
 */
export function runCommand<K extends VerbId>(cmd: Command<K>, context: VerbContext): Promise<number | void> {
  return VERBS[cmd.verb].run(cmd, context);
}
