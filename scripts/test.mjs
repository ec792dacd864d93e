// `npm test`'s runner: vitest in three phases, so that the real qemu guests (CPU-bound) run beside
// the end-to-end files (which mostly wait on their stack) instead of after them, while the
// timing-sensitive integration files and the chaos run have the machine to themselves.
//   1. unit + integration        one vitest, three files at a time (vitest.config.ts)
//   2. guests | e2e | waits       three vitest processes at once: the guest files one at a time, the
//                                 e2e files two at a time (a stack each), and the integration files
//                                 that mostly wait on real time (vitest.config.ts WAITING_TESTS)
//   3. chaos                      alone
// Every phase runs even when an earlier one failed; the exit code is non-zero when any did. Each
// vitest writes its JSON report to test-results/vitest-<projects>.json (vitest-unit+integration.json,
// vitest-guests.json, …). Arguments are passed to every vitest (a file filter, `-t`), with
// --passWithNoTests so that a phase the filter leaves empty passes. The summary at the end names
// every failed test with the first line of its error, read back from those reports, so that the
// tail of a long log says what failed.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const PHASES = [[['unit', 'integration']], [['guests'], ['e2e'], ['waits']], [['chaos']]];
const extra = process.argv.slice(2);

/** Runs one vitest over `projects`; with `prefix`, each output line carries the phase's name. */
function vitest(projects, prefix) {
  const name = projects.join('+');
  const args = ['vitest', 'run', ...projects.flatMap((p) => ['--project', p])];
  args.push(`--outputFile.json=${reportPath(name)}`);
  if (extra.length > 0) args.push('--passWithNoTests', ...extra);
  const started = Date.now();
  const child = spawn('npx', args, { stdio: prefix ? ['inherit', 'pipe', 'pipe'] : 'inherit' });
  if (prefix) {
    for (const [from, to] of [
      [child.stdout, process.stdout],
      [child.stderr, process.stderr],
    ])
      createInterface({ input: from }).on('line', (line) => to.write(`[${name}] ${line}\n`));
  }
  return new Promise((resolve) => {
    child.on('error', (err) => resolve({ name, code: 1, seconds: 0, error: String(err) }));
    child.on('close', (code, signal) =>
      resolve({ name, code: code ?? 1, signal, seconds: Math.round((Date.now() - started) / 1000) }),
    );
  });
}

function reportPath(name) {
  return `test-results/vitest-${name}.json`;
}

/** `file > test: first line of the error` for every failed test (or failed file) of a report. */
function failures(name) {
  let report;
  try {
    report = JSON.parse(readFileSync(reportPath(name), 'utf8'));
  } catch (err) {
    return [`(no report: ${err.message})`];
  }
  const firstLine = (text) =>
    String(text ?? '')
      .trim()
      .split('\n')[0]
      .slice(0, 300);
  return report.testResults.flatMap((file) => {
    const where = file.name.replace(`${process.cwd()}/`, '');
    const failed = file.assertionResults.filter((t) => t.status === 'failed');
    if (failed.length === 0) return file.status === 'failed' ? [`${where}: ${firstLine(file.message)}`] : [];
    return failed.map((t) => `${where} > ${t.fullName}: ${firstLine(t.failureMessages[0])}`);
  });
}

const results = [];
const started = Date.now();
for (const phase of PHASES) {
  results.push(...(await Promise.all(phase.map((projects) => vitest(projects, phase.length > 1)))));
}
console.log(`\nnpm test: ${Math.round((Date.now() - started) / 1000)} s of vitest`);
for (const r of results) {
  const how = r.code === 0 ? 'passed' : `FAILED (${r.signal ?? `exit ${r.code}`}${r.error ? `: ${r.error}` : ''})`;
  console.log(`  ${r.name.padEnd(18)} ${String(r.seconds).padStart(5)} s  ${how}`);
  if (r.code !== 0) for (const line of failures(r.name)) console.log(`    ${line}`);
}
process.exit(results.every((r) => r.code === 0) ? 0 : 1);
