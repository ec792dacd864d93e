/**
 * `npm run terraform:render`: writes infra/terraform/topology.auto.tf.json and
 * infra/kubernetes/rbac.yaml from infra/topology.yaml; `--check` only reports whether either is stale.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { RBAC_FILE, renderRbac } from '../kubernetes/rbac.js';
import { findTopologyFile, loadTopology } from '../local/topology.js';
import { RENDERED_FILE, renderTopologyFile } from './render.js';

const topologyFile = findTopologyFile(process.cwd());
const root = dirname(dirname(topologyFile));
const topology = loadTopology(topologyFile);
const outputs: [string, string][] = [
  [RENDERED_FILE, renderTopologyFile(topology)],
  [RBAC_FILE, renderRbac(topology)],
];
let stale = false;
for (const [file, text] of outputs) {
  const target = join(root, file);
  let current = '';
  try {
    current = readFileSync(target, 'utf8');
  } catch {
    // absent: rendered below, or stale under --check
  }
  if (process.argv.includes('--check')) {
    if (current !== text) {
      process.stderr.write(`${file} is stale: run \`npm run terraform:render\` and commit it\n`);
      stale = true;
    } else process.stdout.write(`${file} is up to date\n`);
  } else if (current === text) {
    process.stdout.write(`${file} unchanged\n`);
  } else {
    writeFileSync(target, text);
    process.stdout.write(`wrote ${file}\n`);
  }
}
if (stale) process.exit(1);
