#!/usr/bin/env node
/** The `egress` CLI entry (the package's `bin`): wires the process to `run` and exits with its code. */
import { run } from './run.js';

const controller = new AbortController();
// The first Ctrl-C ends a watch or a wait cleanly; a second one kills the process as usual.
process.once('SIGINT', () => controller.abort());

const code = await run(process.argv.slice(2), {
  stdout: {
    write: (text) => void process.stdout.write(text),
    isTTY: process.stdout.isTTY === true,
    get columns() {
      return process.stdout.columns;
    },
  },
  stderr: { write: (text) => void process.stderr.write(text) },
  env: process.env,
  cwd: process.cwd(),
  signal: controller.signal,
});
// Exit now rather than when fetch's idle keep-alive sockets time out; flush both streams first.
process.stdout.write('', () => process.stderr.write('', () => process.exit(code)));
