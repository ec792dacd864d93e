/** Telemetry configuration from the environment: where spans and metrics go, and how many traces are kept. */
import { z } from 'zod';
import { toValidationError } from '../domain/proxy.js';
import { ValidationError } from '../errors.js';

/**
 * - `gcp`: Cloud Trace and Cloud Monitoring (each exporter is loaded on its first export).
 * - `file`: JSON lines on local disk (the local stack: `EGRESS_TRACE_FILE`, `EGRESS_METRICS_FILE`).
 * - `none`: nothing is recorded, but an incoming `traceparent` still flows on to log lines and to
 *   the messages published.
 */
export const TELEMETRY_MODES = ['gcp', 'file', 'none'] as const;
export type TelemetryMode = (typeof TELEMETRY_MODES)[number];

/** The telemetry set-up of one process. */
export interface TelemetryConfig {
  mode: TelemetryMode;
  /** Google Cloud project for the exporters (they detect it from the credentials when absent). */
  project?: string;
  traceFile?: string;
  metricsFile?: string;
  /** Share of new traces recorded; a trace begun elsewhere follows its parent's decision. */
  sampleRatio: number;
  /** How often metrics are exported (Cloud Monitoring takes one point per series per 5 s at most). */
  metricIntervalMs: number;
}

const blankIsAbsent = (v: unknown) => (v === '' ? undefined : v);
const envSchema = z.object({
  EGRESS_TELEMETRY: z.preprocess(blankIsAbsent, z.enum(TELEMETRY_MODES).optional()),
  EGRESS_TRACE_FILE: z.preprocess(blankIsAbsent, z.string().optional()),
  EGRESS_METRICS_FILE: z.preprocess(blankIsAbsent, z.string().optional()),
  EGRESS_TRACE_SAMPLE_RATIO: z.preprocess(blankIsAbsent, z.coerce.number().min(0).max(1).default(1)),
  EGRESS_METRIC_INTERVAL_SECONDS: z.preprocess(blankIsAbsent, z.coerce.number().int().min(5).optional()),
  EGRESS_PROJECT: z.preprocess(blankIsAbsent, z.string().optional()),
  GOOGLE_CLOUD_PROJECT: z.preprocess(blankIsAbsent, z.string().optional()),
});

/**
 * Reads `EGRESS_TELEMETRY` (default `file` when `EGRESS_TRACE_FILE` is set, else `none`),
 * `EGRESS_TRACE_FILE`, `EGRESS_METRICS_FILE`, `EGRESS_TRACE_SAMPLE_RATIO` (default 1),
 * `EGRESS_METRIC_INTERVAL_SECONDS` (default 60, or 10 with files) and the project
 * (`EGRESS_PROJECT` or `GOOGLE_CLOUD_PROJECT`).
 *
 * @param env - the environment (tests pass their own)
 * @returns a frozen config
 * @throws ValidationError naming the variable
 */
export function loadTelemetryConfig(env: Record<string, string | undefined> = process.env): TelemetryConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) throw toValidationError(parsed.error);
  const e = parsed.data;
  const mode = e.EGRESS_TELEMETRY ?? (e.EGRESS_TRACE_FILE ? 'file' : 'none');
  if (mode === 'file' && !e.EGRESS_TRACE_FILE)
    throw new ValidationError('EGRESS_TRACE_FILE', 'required when EGRESS_TELEMETRY=file');
  const config: TelemetryConfig = {
    mode,
    sampleRatio: e.EGRESS_TRACE_SAMPLE_RATIO,
    metricIntervalMs: (e.EGRESS_METRIC_INTERVAL_SECONDS ?? (mode === 'file' ? 10 : 60)) * 1000,
  };
  const project = e.EGRESS_PROJECT ?? e.GOOGLE_CLOUD_PROJECT;
  if (project) config.project = project;
  if (e.EGRESS_TRACE_FILE) config.traceFile = e.EGRESS_TRACE_FILE;
  if (e.EGRESS_METRICS_FILE) config.metricsFile = e.EGRESS_METRICS_FILE;
  return Object.freeze(config);
}
