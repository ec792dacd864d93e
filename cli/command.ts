/** The `egress` command line's vocabulary: each verb's command, the flags, and the usage error. */
import type { parseArgs } from 'node:util';
import type { ReportReason } from '../shared/domain/reports.js';
import type { Phase } from '../shared/domain/status.js';

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

/**
 * What each verb carries once parsed, keyed by its id: the id is the command's `verb` and is typed
 * as words (`get-proxies` is `egress get proxies`). cli/verbs.ts must define every id here, once.
 */
export interface CommandShapes {
  apply: { files: string[]; wait: boolean; timeoutMs: number };
  'get-proxies': { output: GetOutput; provider?: string; phase?: Phase; labels: string[]; watch: boolean };
  'get-proxy': { name: string; output: GetOutput };
  'describe-proxy': { name: string };
  'delete-proxy': { names: string[]; wait: boolean; timeoutMs: number };
  'report-proxy': { name: string; reason: ReportReason; target?: string; detail?: string };
  'get-providers': { output: GetOutput };
  'get-pools': { output: GetOutput };
  'get-pool': { name: string; output: GetOutput };
  'describe-pool': { name: string };
  'delete-pool': { name: string; wait: boolean; timeoutMs: number };
  'scale-pool': { name: string; replicas: number; wait: boolean; timeoutMs: number };
  discover: {
    output: DiscoverOutput;
    provider?: string;
    /** Only members of this pool (`?pool=`). */
    pool?: string;
    /** Leave out proxies reported for this domain (`?for=`). */
    forDomain?: string;
    labels: string[];
    maxLatencyMs?: number;
    /** Strict country (`?country=`), upper case. */
    country?: string;
    asn?: number;
    distinct: boolean;
    limit?: number;
    random: boolean;
  };
  gateway: {
    listen: HostPort;
    pool?: string;
    provider?: string;
    labels: string[];
    banOn: number[];
    metrics?: HostPort;
    /** `--socks-no-auth 127.0.0.1,::1`: loopback clients that may use SOCKS5 without credentials. */
    socksNoAuthFrom: string[];
    /** `--wake-timeout 120s`: how long a request for a sleeping pool is held while it wakes. */
    wakeTimeoutMs: number;
  };
  cost: {
    /** The providers config (`--config`). */
    config: string;
    /** Fleet files (`-f`); empty with `--proxies`. */
    files: string[];
    proxies?: number;
    provider?: string;
    /** Internet egress of the whole fleet, GiB a month (`--egress-gb`). */
    egressGib: number;
  };
  doctor: {
    config: string;
    /** Fleet files (`-f`) or `--proxies N`: the fleet the quotas must hold. */
    files: string[];
    proxies?: number;
    provider?: string;
    /** The repository's `infra/` (`--infra`): the APIs, subscriptions and names Terraform uses. */
    infra: string;
    /** `--api-public`: the deployment sets api_public = true. */
    apiPublic: boolean;
    /** `--functions-range CIDR`: the connector or Direct VPC egress range the functions probe from. */
    functionsRange?: string;
  };
}

/** A verb's id (`get-proxies`). */
export type VerbId = keyof CommandShapes;

/** What the user asked for: one verb's command (`Command<'cost'>`), or any of them. */
export type Command<K extends VerbId = VerbId> = { [P in K]: { verb: P } & CommandShapes[P] }[K];

/** What parsing a command line gives: a command, or the request for help. */
export type CommandLine = Command | { verb: 'help' };

/** `--listen` / `--metrics`: where to listen. */
export interface HostPort {
  host: string;
  port: number;
}

/**
 * Every flag of every verb, one line each, parsed once for the whole line (a name means one thing
 * for every verb); each verb then accepts only those its definition in cli/verbs.ts lists.
 */
export const OPTIONS = {
  filename: { type: 'string', short: 'f', multiple: true },
  wait: { type: 'boolean' },
  timeout: { type: 'string' },
  output: { type: 'string', short: 'o' },
  provider: { type: 'string' },
  phase: { type: 'string' },
  label: { type: 'string', short: 'l', multiple: true },
  watch: { type: 'boolean', short: 'w' },
  'max-latency-ms': { type: 'string' },
  country: { type: 'string' },
  asn: { type: 'string' },
  distinct: { type: 'boolean' },
  limit: { type: 'string' },
  random: { type: 'boolean' },
  replicas: { type: 'string' },
  listen: { type: 'string' },
  pool: { type: 'string' },
  'ban-on': { type: 'string' },
  'socks-no-auth': { type: 'string' },
  'wake-timeout': { type: 'string' },
  metrics: { type: 'string' },
  reason: { type: 'string' },
  target: { type: 'string' },
  for: { type: 'string' },
  detail: { type: 'string' },
  config: { type: 'string' },
  proxies: { type: 'string' },
  'egress-gb': { type: 'string' },
  infra: { type: 'string' },
  'api-public': { type: 'boolean' },
  'functions-range': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;
export type Flag = keyof typeof OPTIONS;

/** The flags' values as `parseArgs` returns them for {@link OPTIONS}. */
export type FlagValues = ReturnType<
  typeof parseArgs<{ options: typeof OPTIONS; strict: true; allowPositionals: true }>
>['values'];
