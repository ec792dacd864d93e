/** The `egress` command line (README.md "The `egress` CLI") parsed into a typed command by the verbs' table; mistakes are usage errors (exit 2). */
import { parseArgs } from 'node:util';
import { OPTIONS, UsageError, type Command, type CommandLine, type FlagValues, type VerbId } from './command.js';
import { VERBS } from './verbs.js';

const IDS = Object.keys(VERBS) as VerbId[];

/** A verb's id as the user types it: `get-proxies` is `get proxies`. */
const wordsOf = (id: VerbId) => id.replace('-', ' ');

/** One verb in the help: its synopsis, and its help in a column beside it, or below when the synopsis is long. */
function helpEntry({ synopsis, help }: { synopsis: string; help: readonly string[] }): string {
  const indent = ' '.repeat(45);
  const head = `  ${synopsis}`;
  const [first = '', ...more] = help.map((line) => `${indent}${line}`);
  const beside = head.length < indent.length - 1;
  return [beside ? `${head}${first.slice(head.length)}` : `${head}\n${first}`, ...more].join('\n');
}

/** The help text (`egress --help`). */
export const USAGE = `Usage: egress <command> [flags]

Commands:
${IDS.map((id) => helpEntry(VERBS[id])).join('\n')}

The API is EGRESS_API_URL with the bearer token EGRESS_TOKEN; when unset, both are read from
local.env in EGRESS_HOME, or in .egress/ of the current directory or a parent (written by npm start).
Behind Cloud Run IAM a Google ID token from Application Default Credentials goes along:
EGRESS_API_AUTH=auto|google|none (auto: only to *.run.app and *.cloudfunctions.net URLs),
EGRESS_API_AUDIENCE (default: the service URL), EGRESS_ID_TOKEN (a token to send as it is).
Exit codes: 0 success, 1 failure, 2 usage error.
`;

/** The words for each resource, singular and plural alike. */
const RESOURCES = new Map<string, 'proxy' | 'provider' | 'pool'>([
  ['proxy', 'proxy'],
  ['proxies', 'proxy'],
  ['provider', 'provider'],
  ['providers', 'provider'],
  ['pool', 'pool'],
  ['pools', 'pool'],
]);

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

/** A missing or unknown resource after a verb that takes one. */
function resourceMistake(verb: string, word: string | undefined): UsageError {
  if (verb === 'scale') return new UsageError('usage: egress scale pool NAME --replicas N');
  if (word !== undefined) return new UsageError(`unknown resource "${word}" for ${verb}`);
  if (verb === 'report') return new UsageError('missing resource: egress report proxy NAME --reason R');
  return new UsageError(`missing resource: egress ${verb} proxy|proxies|providers|pool|pools`);
}

/**
 * The verb a command line names: by its first word, then its resource in either number; where a
 * resource has a list and a one-name verb (`get proxies`, `get proxy NAME`), operands choose.
 */
function verbOf(word: string, resourceWord: string | undefined, operands: readonly string[]): VerbId {
  const ids = IDS.filter((id) => id.split('-')[0] === word);
  if (ids.length === 0) throw new UsageError(`unknown command "${word}"`);
  const bare = ids.find((id) => id === word);
  if (bare !== undefined) {
    if (resourceWord !== undefined) throw new UsageError(`unexpected argument "${resourceWord}" for ${word}`);
    return bare;
  }
  const resource = resourceWord === undefined ? undefined : RESOURCES.get(resourceWord);
  const matching =
    resource === undefined ? [] : ids.filter((id) => RESOURCES.get(id.slice(word.length + 1)) === resource);
  const chosen = matching.find((id) => (VERBS[id].operands === 'none') === (operands.length === 0)) ?? matching[0];
  if (chosen === undefined) throw resourceMistake(word, resourceWord);
  return chosen;
}

/**
 * Parses the arguments after `egress`.
 *
 * @param argv - e.g. `['get', 'proxies', '-o', 'wide']`
 * @returns the command
 * @throws UsageError for an unknown verb or flag, a missing argument or a bad flag value
 */
export function parseCommand(argv: readonly string[]): CommandLine {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options: OPTIONS, strict: true, allowPositionals: true });
  } catch (err) {
    throw usageFromParseError(err);
  }
  const { values, positionals } = parsed;
  const [word, resourceWord, ...rest] = positionals;
  if (values.help || word === 'help') return { verb: 'help' };
  if (word === undefined) throw new UsageError('missing command');

  return build(verbOf(word, resourceWord, rest), rest, values);
}

/** The command of verb `id`, its flags and operands checked against the verb's own. */
function build<K extends VerbId>(id: K, operands: readonly string[], values: FlagValues): Command<K> {
  const definition = VERBS[id];
  for (const flag of Object.keys(values)) {
    if (!definition.flags.some((f) => f === flag))
      throw new UsageError(`unknown flag --${flag} for "egress ${wordsOf(id)}"`);
  }
  const max = { none: 0, one: 1, many: Infinity }[definition.operands];
  if (operands.length > max) throw new UsageError(`unexpected argument "${String(operands[max])}"`);
  return { verb: id, ...definition.build(operands, values) };
}
