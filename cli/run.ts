/** `egress <args>` as a function: parses, runs the command with its verb's definition, maps failures to exit codes. */
import { ApiError } from '../shared/api/api-error.js';
import { createApiClient, type ApiClient } from './api-client.js';
import { USAGE, parseCommand } from './args.js';
import { UsageError } from './command.js';
import { apiErrorText, ReportedFailure, type Io } from './commands.js';
import { loadCliConfig } from './config.js';
import { printableIo } from './printable.js';
import { runCommand } from './verbs.js';

/** Exit codes of README.md "The `egress` CLI" (130 after Ctrl-C, as shells report SIGINT). */
export const EXIT = { ok: 0, failure: 1, usage: 2, interrupted: 130 } as const;

/**
 * Runs the CLI once.
 *
 * @param argv - the arguments after `egress`
 * @param raw - streams, environment and clock (every write is made printable: printable.ts)
 * @param clientFor - the API client to use (tests may pass one; default: from the config)
 * @returns the exit code: 0 success, 1 failure, 2 usage error
 */
export async function run(argv: readonly string[], raw: Io, clientFor?: () => ApiClient): Promise<number> {
  const io = printableIo(raw);
  if (argv.length === 0) {
    io.stderr.write(USAGE);
    return EXIT.usage;
  }
  try {
    const command = parseCommand(argv);
    if (command.verb === 'help') {
      io.stdout.write(USAGE);
      return EXIT.ok;
    }
    const config = () => loadCliConfig(io.env, io.cwd);
    const client = clientFor ?? (() => createApiClient(config(), io.signal));
    return (await runCommand(command, { io, config, client })) ?? EXIT.ok;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr.write(`error: ${err.message}\nRun 'egress --help' for usage.\n`);
      return EXIT.usage;
    }
    if (io.signal?.aborted) {
      io.stderr.write('interrupted\n');
      return EXIT.interrupted;
    }
    if (err instanceof ReportedFailure) return EXIT.failure;
    const message = err instanceof ApiError ? apiErrorText(err) : err instanceof Error ? err.message : String(err);
    io.stderr.write(`error: ${message}\n`);
    return EXIT.failure;
  }
}
