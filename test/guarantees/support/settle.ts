/** Runs checks (the sweep's job) until a set of proxies reaches what is expected, and proves it stays there. */
import { setTimeout as sleep } from 'node:timers/promises';
import { runCheck, type CheckDeps } from '../../../shared/reconcile/check.js';
import { iname, type Expected, type World } from './world.js';

export interface Settled {
  ms: number;
  checks: number;
}

/** Every problem of every name, prefixed with the name. */
export async function allProblems(world: World, expected: ReadonlyMap<string, Expected>): Promise<string[]> {
  const lists = await Promise.all(
    [...expected].map(async ([name, want]) => (await world.problems(name, want)).map((p) => `${name}: ${p}`)),
  );
  return lists.flat();
}

/**
 * Waits `observeMs` for the names to match `expected` on their own (driven by the system's own
 * messages), then checks them until they do; then checks twice more and requires that
 * nothing moves (no create or delete reaches the provider, still as expected), then that exactly
 * one proxy process runs per live proxy and none for a deleted one.
 *
 * @throws Error listing what is still wrong after `timeoutMs` (a stuck document or a leak)
 */
export async function settle(
  world: World,
  deps: CheckDeps,
  expected: ReadonlyMap<string, Expected>,
  timeoutMs = 60_000,
  observeMs = 0,
): Promise<Settled> {
  const started = Date.now();
  const names = [...expected.keys()];
  let checks = 0;
  let problems: string[] = [];
  const check = async () => {
    checks++;
    await runCheck(deps, { names }).catch(() => undefined);
  };
  // The system's own messages (kicks, redeliveries, sweeps) drive it first; checks only help later.
  for (;;) {
    problems = await allProblems(world, expected);
    if (problems.length === 0) break;
    const elapsed = Date.now() - started;
    if (elapsed > timeoutMs) {
      const names = new Set(problems.map((p) => p.split(':')[0] ?? ''));
      const dumps = await Promise.all([...names].map(async (n) => JSON.stringify(await world.snapshot(n))));
      throw new Error(`not settled after ${timeoutMs} ms:\n  ${problems.join('\n  ')}\n${dumps.join('\n')}`);
    }
    if (elapsed > observeMs) await check();
    await sleep(500);
  }
  const mutations = () =>
    names.reduce(
      (n, name) => n + (world.stats.creates.get(iname(name)) ?? 0) + (world.stats.deletes.get(iname(name)) ?? 0),
      0,
    );
  const before = mutations();
  for (let i = 0; i < 2; i++) {
    await sleep(300);
    await check();
  }
  problems = await allProblems(world, expected);
  if (mutations() !== before) problems.push(`not quiet: ${mutations() - before} create/delete calls after settling`);
  for (let attempt = 0; ; attempt++) {
    const processes = await world.processes();
    const wrong = [...expected].flatMap(([name, want]) => {
      const count = processes.get(iname(name)) ?? 0;
      const should = want.exists ? 1 : 0;
      return count === should ? [] : [`${name}: ${count} proxy processes, want ${should}`];
    });
    if (wrong.length === 0) break;
    if (attempt >= 10) {
      problems.push(...wrong);
      break;
    }
    await sleep(300);
  }
  if (problems.length > 0) throw new Error(`settled, then:\n  ${problems.join('\n  ')}`);
  return { ms: Date.now() - started, checks };
}
