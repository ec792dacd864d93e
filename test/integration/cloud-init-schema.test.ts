/**
 * Every user-data the gcp provider and the kvm seed generate, and the echo VM's as `npm run build`
 * wrote it, is valid to real cloud-init: Debian's `cloud-init schema` (the package the guests run)
 * checks each against its own schema.
 */
import { DEFAULT_EGRESS_POLICY } from '../../shared/config/egress-policy.js';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildUserData } from '../../shared/providers/gcp/cloud-init.js';
import { buildSeed } from '../../relay/backends/kvm/seed.js';

const run = promisify(execFile);
const credentials = { username: 'u-x.1', password: 'p-Long.pass_word-9' };
const cases = [
  ['gcp', buildUserData({ instance: 'ep-g-1', proxy: 'g-1', port: 3128, credentials, egress: DEFAULT_EGRESS_POLICY })],
  [
    'gcp, another port',
    buildUserData({ instance: 'ep-g-2', proxy: 'g-2', port: 8888, credentials, egress: DEFAULT_EGRESS_POLICY }),
  ],
  [
    'kvm',
    buildSeed({
      instance: 'ep-k-1',
      proxy: 'k-1',
      port: 3128,
      credentials,
      egress: DEFAULT_EGRESS_POLICY,
      createdAt: 1,
    }).userData,
  ],
  [
    'kvm, another port',
    buildSeed({
      instance: 'ep-k-2',
      proxy: 'k-2',
      port: 18080,
      credentials,
      egress: DEFAULT_EGRESS_POLICY,
      createdAt: 2,
    }).userData,
  ],
  ['echo VM', readFileSync(new URL('../../dist/echo/user-data.yaml', import.meta.url), 'utf8')],
] as const;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'egress-schema-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

describe('cloud-init schema', () => {
  it.each(cases)('%s user-data is valid', async (name, userData) => {
    const file = path.join(dir, `${name.replace(/\W+/g, '-')}.yaml`);
    await writeFile(file, userData);
    const { stdout } = await run('cloud-init', ['schema', '--config-file', file], { encoding: 'utf8' });
    expect(stdout).toContain('Valid cloud-config');
  });

  it('refuses what is not valid (the check can fail)', async () => {
    const file = path.join(dir, 'bad.yaml');
    await writeFile(file, '#cloud-config\nwrite_files:\n  - path: 3\n    permissions: [1]\n');
    await expect(run('cloud-init', ['schema', '--config-file', file])).rejects.toThrow(/Invalid cloud-config|Error/);
  });
});
