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

/** Field names whose values are replaced before a line is written. */
const SECRET_KEYS = /pass(word)?|secret|token|authorization|credential/i;

function redact(fields: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) {
    if (SECRET_KEYS.test(k)) out[k] = '[redacted]';
    else if (v instanceof Error) out[k] = { name: v.name, message: v.message };
    else out[k] = v;
  }
  return out;
}

/**
 * @param options.project - adds `logging.googleapis.com/trace` when a span is active
 * @param options.write - where lines go (stdout by default; tests capture them)
 */
export function createLogger(
  options: { project?: string; base?: Record<string, unknown>; write?: (line: string) => void; level?: Severity } = {},
): Logger {
  const write = options.write ?? ((line: string) => process.stdout.write(`${line}\n`));
  const order: Severity[] = ['DEBUG', 'INFO', 'WARNING', 'ERROR'];
  const min = order.indexOf(options.level ?? 'INFO');
  const base = options.base ?? {};
  const emit = (severity: Severity, message: string, fields: Record<string, unknown> = {}) => {
    if (order.indexOf(severity) < min) return;
    const line: Record<string, unknown> = {
      severity,
      message,
      time: new Date().toISOString(),
      ...redact({ ...base, ...fields }),
    };
    const span = trace.getActiveSpan()?.spanContext();
    if (span && options.project) {
      line['logging.googleapis.com/trace'] = `projects/${options.project}/traces/${span.traceId}`;
      line['logging.googleapis.com/spanId'] = span.spanId;
    }
    write(JSON.stringify(line));
  };
  return {
    debug: (m, f) => emit('DEBUG', m, f),
    info: (m, f) => emit('INFO', m, f),
    warn: (m, f) => emit('WARNING', m, f),
    error: (m, f) => emit('ERROR', m, f),
    child: (fields) => createLogger({ ...options, base: { ...base, ...fields } }),
  };
}
