/** `npm run terraform:render`: writes infra/terraform/topology.auto.tf.json; `--check` only reports whether it is stale. */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { findTopologyFile, loadTopology } from '../local/topology.js';
import { RENDERED_FILE, renderTopologyFile } from './render.js';

const topologyFile = findTopologyFile(process.cwd());
const target = join(dirname(dirname(topologyFile)), RENDERED_FILE);
const text = renderTopologyFile(loadTopology(topologyFile));
let current = '';
try {
  current = readFileSync(target, 'utf8');
} catch {
  // absent: rendered below, or stale under --check
}
if (process.argv.includes('--check')) {
  if (current !== text) {
    process.stderr.write(`${RENDERED_FILE} is stale: run \`npm run terraform:render\` and commit it\n`);
    process.exit(1);
  }
  process.stdout.write(`${RENDERED_FILE} is up to date\n`);
} else if (current === text) {
  process.stdout.write(`${RENDERED_FILE} unchanged\n`);
} else {
  writeFileSync(target, text);
  process.stdout.write(`wrote ${RENDERED_FILE}\n`);
}
