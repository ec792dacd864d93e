/** `npm run traces [-- TRACE_ID | --proxy NAME]`: the local stack's recorded traces, as a list or one tree. */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSpanFile, renderTrace, summarize } from './trace-view.js';
import { stackHome } from './stack.js';

function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'firebase.json'))) {
    const up = dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
  return dir;
}

const args = process.argv.slice(2);
const file = process.env['EGRESS_TRACE_FILE'] ?? join(stackHome(repoRoot(), process.env), 'telemetry', 'spans.jsonl');
const { spans, invalid } = readSpanFile(file);
if (spans.length === 0) {
  console.log(`no spans in ${file}: is the local stack running (npm start)?`);
  process.exit(0);
}
const proxyAt = args.indexOf('--proxy');
const proxy = proxyAt >= 0 ? args[proxyAt + 1] : undefined;
const traceId = proxyAt >= 0 ? undefined : args[0];
if (traceId) {
  process.stdout.write(renderTrace(spans, traceId));
} else {
  const wanted = proxy
    ? new Set(spans.filter((s) => s.attributes['proxy.name'] === proxy).map((s) => s.traceId))
    : undefined;
  const traces = summarize(spans).filter((t) => !wanted || wanted.has(t.traceId));
  for (const t of traces.slice(0, 30)) {
    console.log(
      `${t.traceId}  ${t.start}  ${String(t.durationMs).padStart(6)}ms  ${String(t.spans).padStart(4)} spans  ${t.root}  [${t.services.join(', ')}]`,
    );
  }
  console.log(`\n${traces.length} trace(s) in ${file}${invalid ? ` (${invalid} unreadable line(s))` : ''}`);
  console.log('show one: npm run traces -- <trace id>');
}
