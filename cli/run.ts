/** `egress <args>` as a function: parses, loads the API config, runs the command, maps failures to exit codes. */
import { ApiError, createApiClient, type ApiClient } from './api-client.js';
import { USAGE, parseCommand } from './args.js';
import { UsageError } from './command.js';
import { apiErrorText, execute, ReportedFailure, type Io } from './commands.js';
import { loadCliConfig } from './config.js';
import { printableIo } from './printable.js';
import { runCost } from './cost.js';
import { runDoctor } from './doctor/index.js';
import { runGateway } from './gateway.js';

/** Exit codes of interfaces.md §4 (130 after Ctrl-C, as shells report SIGINT). */
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
    if (command.verb === 'cost') {
      // Reads only local files: no API.
      runCost(io, command);
      return EXIT.ok;
    }
    if (command.verb === 'doctor') return await runDoctor(io, command);
    if (command.verb === 'gateway') {
      // Runs until Ctrl-C: the interrupt is how it ends, not a failure.
      await runGateway(command, io, loadCliConfig(io.env, io.cwd));
      return EXIT.ok;
    }
    const client = clientFor ? clientFor() : createApiClient(loadCliConfig(io.env, io.cwd), io.signal);
    await execute(client, io, command);
    return EXIT.ok;
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
