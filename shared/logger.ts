/** An injected logger writing JSON lines in Cloud Logging's shape; secrets never belong in its fields. */
import { trace } from '@opentelemetry/api';

export type Severity = 'DEBUG' | 'INFO' | 'WARNING' | 'ERROR';

export interface Logger {
  debug(message: string, fields?: Record<string, unknown>): void;
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
  /** A logger that adds `fields` to every line. */
  child(fields: Record<string, unknown>): Logger;
}

/** Field names whose values are replaced before a line is written, at any depth. */
const SECRET_KEYS = /pass(word)?|secret|token|authorization|credential/i;
const MAX_DEPTH = 6;

function redactValue(value: unknown, depth: number): unknown {
  if (value instanceof Error) return { name: value.name, message: value.message };
  if (value === null || typeof value !== 'object') return value;
  if (depth >= MAX_DEPTH) return '[truncated]';
  if (Array.isArray(value)) return value.map((v) => redactValue(v, depth + 1));
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[k] = SECRET_KEYS.test(k) ? '[redacted]' : redactValue(v, depth + 1);
  return out;
}

/** Options of {@link createLogger} and {@link formatLogLine}. */
export interface LoggerOptions {
  /** Adds `logging.googleapis.com/trace` (and `spanId`, `trace_sampled`) when a span is active. */
  project?: string;
  base?: Record<string, unknown>;
  /** Where lines go (stdout by default; tests capture them). */
  write?: (line: string) => void;
  level?: Severity;
}

/**
 * One log line as Cloud Logging reads it: `severity`, `message`, `time`, the fields (secret-looking
 * keys redacted at any depth, errors reduced to name and message) and the active span's trace.
 * A field `stack_trace` (a string) is kept as is, so Error Reporting picks the line up.
 */
export function formatLogLine(
  options: Pick<LoggerOptions, 'project' | 'base'>,
  severity: Severity,
  message: string,
  fields: Record<string, unknown> = {},
): string {
  const redacted = redactValue({ ...options.base, ...fields }, 0);
  const line: Record<string, unknown> = {
    severity,
    message,
    time: new Date().toISOString(),
    ...(typeof redacted === 'object' ? redacted : {}),
  };
  const span = trace.getActiveSpan()?.spanContext();
  if (span && options.project) {
    line['logging.googleapis.com/trace'] = `projects/${options.project}/traces/${span.traceId}`;
    line['logging.googleapis.com/spanId'] = span.spanId;
    // Bit 0 of the W3C trace flags is `sampled`.
    line['logging.googleapis.com/trace_sampled'] = (span.traceFlags & 1) === 1;
  }
  return JSON.stringify(line);
}

/**
 * @param options.project - adds `logging.googleapis.com/trace` when a span is active
 * @param options.write - where lines go (stdout by default; tests capture them)
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const order: Severity[] = ['DEBUG', 'INFO', 'WARNING', 'ERROR'];
  const min = order.indexOf(options.level ?? 'INFO');
  const base = options.base ?? {};
  const emit = (severity: Severity, message: string, fields: Record<string, unknown> = {}) => {
    if (order.indexOf(severity) < min) return;
    write(formatLogLine({ project: options.project, base }, severity, message, fields));
  };
  return {
    debug: (m, f) => emit('DEBUG', m, f),
    info: (m, f) => emit('INFO', m, f),
    warn: (m, f) => emit('WARNING', m, f),
    error: (m, f) => emit('ERROR', m, f),
    child: (fields) => createLogger({ ...options, base: { ...base, ...fields } }),
  };
}
