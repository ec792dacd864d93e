/**
 * One function instance of the local stack: what functions-framework's own CLI does (load the
 * function's bundle, serve it with the framework's server), but listening on the stack's host
 * only. The framework's CLI listens on every interface (`server.listen(port)` in its
 * build/src/main.js) and has no option for the address, so a laptop on a café network would serve
 * the API and the push endpoints to it. The bundle registers its function with the framework
 * (`http(…)`/`cloudEvent(…)`), and `getTestServer` builds the framework's own server for it.
 *
 * Arguments: `--target=NAME --source=DIR --port=N --host=ADDRESS`.
 */
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { getTestServer } from '@google-cloud/functions-framework/testing';

const { values } = parseArgs({
  options: {
    target: { type: 'string' },
    source: { type: 'string' },
    port: { type: 'string' },
    host: { type: 'string' },
  },
  strict: true,
});
const { target, source, host } = values;
const port = Number(values.port);
if (!target || !source || !host || !Number.isInteger(port) || port < 1 || port > 65535) {
  console.error('usage: function-instance --target=NAME --source=DIR --port=N --host=ADDRESS');
  process.exit(2);
}

await import(pathToFileURL(join(source, 'index.js')).href);
const server = getTestServer(target);
// The framework's CLI disables the idle timeout of incoming connections the same way.
server.setTimeout(0);
server.listen(port, host, () => {
  // The framework's own start lines, which the stack's logs have always begun with.
  console.log('Serving function...');
  console.log(`Function: ${target}`);
  console.log(`URL: http://${host}:${port}/`);
});
