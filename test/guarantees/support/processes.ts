/** Counts the real proxy processes of a process backend by their marker arguments (/proc), per instance name. */
import { readdir, readFile, realpath } from 'node:fs/promises';

/**
 * @param stateDir - the backend's state directory (resolved as the backend does)
 * @returns live processes per instance name
 */
export async function proxyProcesses(stateDir: string): Promise<Map<string, number>> {
  const root = await realpath(stateDir);
  const stateMarker = `--egress-state=${root}`;
  const counts = new Map<string, number>();
  const pids = (await readdir('/proc')).filter((e) => /^\d+$/.test(e));
  await Promise.all(
    pids.map(async (pid) => {
      const argv = await readFile(`/proc/${pid}/cmdline`, 'utf8').then(
        (raw) => raw.split('\0'),
        (): string[] => [],
      );
      if (!argv.includes(stateMarker)) return;
      const name = argv.find((a) => a.startsWith('--egress-proxy='))?.slice('--egress-proxy='.length);
      if (name) counts.set(name, (counts.get(name) ?? 0) + 1);
    }),
  );
  return counts;
}
