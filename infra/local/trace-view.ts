/** Reading the local stack's span file and showing traces as indented trees (`npm run traces`). */
import { readFileSync } from 'node:fs';
import { spanLineSchema, type SpanLine } from '../../shared/telemetry/file-exporter.js';

/** The spans of a span file, and how many lines were not spans. */
export interface SpanFile {
  spans: SpanLine[];
  invalid: number;
}

/** Reads a JSON-lines span file (missing file: no spans). */
export function readSpanFile(path: string): SpanFile {
  let text = '';
  try {
    text = readFileSync(path, 'utf8');
  } catch {
    return { spans: [], invalid: 0 };
  }
  const out: SpanFile = { spans: [], invalid: 0 };
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch {
      out.invalid++;
      continue;
    }
    const parsed = spanLineSchema.safeParse(json);
    if (parsed.success) out.spans.push(parsed.data);
    else out.invalid++;
  }
  return out;
}

/** One line of the trace list. */
export interface TraceSummary {
  traceId: string;
  root: string;
  services: string[];
  spans: number;
  start: string;
  durationMs: number;
}

/** Traces, newest first: the root span's name (or the earliest span's), services, span count, extent. */
export function summarize(spans: readonly SpanLine[]): TraceSummary[] {
  const byTrace = new Map<string, SpanLine[]>();
  for (const s of spans) byTrace.set(s.traceId, [...(byTrace.get(s.traceId) ?? []), s]);
  const out: TraceSummary[] = [];
  for (const [traceId, members] of byTrace) {
    const sorted = [...members].sort((a, b) => a.start.localeCompare(b.start));
    const ids = new Set(members.map((m) => m.spanId));
    const root = sorted.find((s) => !s.parentSpanId || !ids.has(s.parentSpanId)) ?? sorted[0];
    const start = Date.parse(sorted[0]?.start ?? '');
    const end = Math.max(...members.map((m) => Date.parse(m.start) + m.durationMs));
    out.push({
      traceId,
      root: root?.name ?? '',
      services: [...new Set(members.map((m) => m.service))].sort(),
      spans: members.length,
      start: sorted[0]?.start ?? '',
      durationMs: Math.round(end - start),
    });
  }
  return out.sort((a, b) => b.start.localeCompare(a.start));
}

/** Attributes shown beside each span, with their short labels. */
const SHOWN_ATTRIBUTES: [string, string][] = [
  ['messaging.destination.name', 'topic'],
  ['messaging.message.id', 'msg'],
  ['proxy.name', 'proxy'],
  ['proxy.phase', 'phase'],
  ['egress.action', 'action'],
  ['provider.name', 'provider'],
  ['provider.instance', 'instance'],
  ['provider.outcome', 'outcome'],
  ['egress.outcome', 'outcome'],
  ['egress.probe.ok', 'ok'],
  ['error.type', 'error'],
];

/**
 * One trace as a tree: each span with its service, offset from the trace start, duration and a few
 * telling attributes. Spans whose parent is not in the file (a remote parent never recorded) start
 * their own branch at the top.
 */
export function renderTrace(spans: readonly SpanLine[], traceId: string): string {
  const members = spans.filter((s) => s.traceId === traceId).sort((a, b) => a.start.localeCompare(b.start));
  if (members.length === 0) return `no spans of trace ${traceId}\n`;
  const t0 = Date.parse(members[0]?.start ?? '');
  const ids = new Set(members.map((m) => m.spanId));
  const children = new Map<string | undefined, SpanLine[]>();
  for (const s of members) {
    const parent = s.parentSpanId && ids.has(s.parentSpanId) ? s.parentSpanId : undefined;
    children.set(parent, [...(children.get(parent) ?? []), s]);
  }
  const lines: string[] = [];
  const walk = (parent: string | undefined, depth: number) => {
    for (const s of children.get(parent) ?? []) {
      const shown = SHOWN_ATTRIBUTES.filter(([k]) => s.attributes[k] !== undefined)
        .map(([k, label]) => `${label}=${String(s.attributes[k])}`)
        .join(' ');
      const offset = `+${Date.parse(s.start) - t0}ms`.padStart(9);
      const failed = s.status.code === 'ERROR' ? ` ERROR ${s.status.message ?? ''}` : '';
      lines.push(
        `${offset} ${'  '.repeat(depth)}${s.name} [${s.service}] ${s.durationMs.toFixed(1)}ms ${shown}${failed}`.trimEnd(),
      );
      walk(s.spanId, depth + 1);
    }
  };
  walk(undefined, 0);
  return `${lines.join('\n')}\n`;
}
