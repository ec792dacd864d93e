/** Stops every proxy and forwarder process a state directory knows of (the local launcher's Ctrl-C). */
import { realpath, rm } from 'node:fs/promises';
import path from 'node:path';
import { findByMarkers, terminate } from './processes.js';
import { markerArgs, stateMarker } from './proxy-config.js';
import { StateStore } from './state.js';

/**
 * Stops every process recorded in `stateDir` (only those that carry our markers, so a recycled
 * pid is never signalled), plus any unrecorded process started for this directory (the forwarders
 * among them), and removes their state and logs.
 *
 * @param stateDir - the process backend's state directory
 * @returns how many processes were stopped
 */
export async function stopAllInstances(stateDir: string): Promise<number> {
  let root: string;
  try {
    root = await realpath(path.resolve(stateDir));
  } catch {
    return 0;
  }
  const store = new StateStore(root);
  const recorded = await store.readAll();
  const stopped = await Promise.all(
    recorded.map(async ({ name, result }) => {
      const hit = result.kind === 'ok' && (await terminate(result.record.pid, markerArgs(name, root)));
      await store.remove(name);
      return hit;
    }),
  );
  const marker = [stateMarker(root)];
  const orphans = await findByMarkers(marker);
  const stoppedOrphans = await Promise.all(orphans.map((pid) => terminate(pid, marker)));
  await rm(store.forwardersDir, { recursive: true, force: true });
  return [...stopped, ...stoppedOrphans].filter(Boolean).length;
}
