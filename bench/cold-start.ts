/**
 * Cold start: a fresh node process imports (and so registers) one built function artifact; the
 * hello-world baseline is measured interleaved with the real ones, round after round.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { startNode, type Artifacts } from './artifacts.js';
import { median } from './stats.js';

export interface ColdStart {
  name: string;
  /** A reference, not a function of ours (the clients-only fixture). */
  reference?: boolean;
  /** This function's import times. */
  importMs: number[];
  /** The hello-world import measured just before each of them. */
  helloMs: number[];
  /** Paired ratios, function over the hello-world measured just before it. */
  ratios: number[];
}

const probeLine = z.object({ importMs: z.number(), registered: z.boolean() });

async function importOnce(artifacts: Artifacts, file: string, name: string, env: NodeJS.ProcessEnv): Promise<number> {
  const { child, line } = await startNode([artifacts.importProbe, file, name], env, true);
  await child.stop();
  const parsed = probeLine.parse(JSON.parse(line));
  if (!parsed.registered) throw new Error(`${file} did not register a function named ${name}`);
  return parsed.importMs;
}

/**
 * @param rounds - each round imports every artifact once, each right after the hello-world
 *   baseline, every import in a fresh process
 * @param env - the environment a deployed function would have (project, emulator hosts)
 */
export async function runColdStart(artifacts: Artifacts, rounds: number, env: NodeJS.ProcessEnv): Promise<ColdStart[]> {
  const helloDir = artifacts.sources.get('bench-hello');
  if (!helloDir) throw new Error('the hello-world fixture was not built');
  const hello = `${helloDir}/index.js`;
  const clientsDir = artifacts.sources.get('bench-clients');
  const measured = [...artifacts.functions].map(([name, file]) => ({ name, file, reference: false }));
  if (clientsDir) measured.push({ name: 'clients', file: `${clientsDir}/index.js`, reference: true });
  const results = measured.map(({ name, file, reference }): ColdStart & { file: string } => ({
    name,
    file,
    importMs: [],
    helloMs: [],
    ratios: [],
    ...(reference ? { reference } : {}),
  }));
  // One unmeasured pass fills the OS file cache for every artifact alike.
  await importOnce(artifacts, hello, 'hello', env);
  for (const r of results) await importOnce(artifacts, r.file, r.name, env);
  for (let round = 0; round < rounds; round++) {
    for (const r of results) {
      const base = await importOnce(artifacts, hello, 'hello', env);
      const own = await importOnce(artifacts, r.file, r.name, env);
      r.helloMs.push(base);
      r.importMs.push(own);
      r.ratios.push(own / base);
    }
  }
  return results.map(({ file: _file, ...rest }) => rest);
}

export function coldStartRatio(fn: ColdStart): number {
  return median(fn.ratios);
}

/**
 * A function's import over the clients-only reference's, paired round by round (both measured in
 * the same round, a fresh process each), median of the pairs.
 */
export function clientsRatio(fn: ColdStart, clients: ColdStart): number {
  const pairs = fn.importMs.flatMap((ms, i) => {
    const reference = clients.importMs[i];
    return reference === undefined ? [] : [ms / reference];
  });
  return median(pairs);
}

/**
 * The packages a bundle imports statically (loaded before it can register). A minified bundle has
 * its imports mid-line (`…;import{a as b}from"pkg";…`), an unminified one on lines of their own.
 */
export function staticImports(file: string): string[] {
  const found = new Set<string>();
  for (const m of readFileSync(file, 'utf8').matchAll(/(?:^|;)\s*import\s*(?:[^;"'`]*?from\s*)?["']([^"']+)["']/gm)) {
    const spec = m[1];
    // A bundle's own chunks are not packages.
    if (spec && !spec.startsWith('node:') && !spec.startsWith('.')) found.add(spec);
  }
  return [...found].sort();
}

/** Each package the `check` bundle imports statically, imported alone in a fresh process. */
export async function importBreakdown(
  artifacts: Artifacts,
  rounds: number,
  env: NodeJS.ProcessEnv,
): Promise<{ name: string; importMs: number }[]> {
  const check = artifacts.functions.get('check');
  if (!check) return [];
  const out: { name: string; importMs: number }[] = [];
  for (const spec of staticImports(check)) {
    const times: number[] = [];
    for (let i = 0; i < rounds; i++) times.push(await importOnce(artifacts, spec, '-', env));
    out.push({ name: spec, importMs: median(times) });
  }
  return out;
}
