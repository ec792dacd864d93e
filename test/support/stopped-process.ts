/** Freezes a process (SIGSTOP) and waits until the kernel has stopped every one of its threads. */
import { readdir, readFile } from 'node:fs/promises';
import { eventually } from './eventually.js';

/** The state letter of each thread of `pid` (`/proc/PID/task/TID/stat`, the field after the name). */
async function threadStates(pid: number): Promise<string[]> {
  const tids = await readdir(`/proc/${pid}/task`);
  const stats = await Promise.all(tids.map((tid) => readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8')));
  return stats.map((stat) => stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3));
}

/**
 * Sends SIGSTOP to `pid` and resolves once all its threads read stopped (`T`): from then on it runs
 * nothing, so it answers nothing, until killed or continued. Gives up after 5 s, naming the states seen.
 */
export async function stopProcess(pid: number): Promise<void> {
  process.kill(pid, 'SIGSTOP');
  await eventually(
    async () => {
      const states = await threadStates(pid);
      if (!states.every((state) => state === 'T' || state === 't'))
        throw new Error(`process ${pid} not stopped after SIGSTOP: thread states ${states.join('')}`);
    },
    5_000,
    10,
  );
}
