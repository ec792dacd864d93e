/** JSON-lines exporters for the local stack: every process appends its spans and metrics to shared files. */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { SpanKind, SpanStatusCode, type Attributes, type HrTime } from '@opentelemetry/api';
import type { ExportResult } from '@opentelemetry/core';
import type { PushMetricExporter, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { z } from 'zod';

/** One span as a line of the trace file (what `spanLineSchema` reads back). */
export const spanLineSchema = z.object({
  traceId: z.string(),
  spanId: z.string(),
  parentSpanId: z.string().optional(),
  name: z.string(),
  kind: z.string(),
  service: z.string(),
  start: z.string(),
  durationMs: z.number(),
  status: z.object({ code: z.string(), message: z.string().optional() }),
  attributes: z.record(z.string(), z.unknown()),
  links: z.array(z.object({ traceId: z.string(), spanId: z.string() })),
  events: z.array(z.object({ name: z.string(), time: z.string(), attributes: z.record(z.string(), z.unknown()) })),
});
export type SpanLine = z.infer<typeof spanLineSchema>;

const SUCCESS: ExportResult = { code: 0 };
const failed = (error: Error): ExportResult => ({ code: 1, error });

function iso(time: HrTime): string {
  return new Date(time[0] * 1000 + Math.floor(time[1] / 1e6)).toISOString();
}

function ms(time: HrTime): number {
  return Math.round((time[0] * 1e3 + time[1] / 1e6) * 1000) / 1000;
}

function plain(attributes: Attributes): Record<string, unknown> {
  return Object.fromEntries(Object.entries(attributes).filter(([, v]) => v !== undefined));
}

/** The JSON form of a finished span. */
export function spanLine(span: ReadableSpan): SpanLine {
  const ctx = span.spanContext();
  const line: SpanLine = {
    traceId: ctx.traceId,
    spanId: ctx.spanId,
    name: span.name,
    kind: SpanKind[span.kind],
    service: String(span.resource.attributes['service.name'] ?? 'unknown'),
    start: iso(span.startTime),
    durationMs: ms(span.duration),
    status: { code: SpanStatusCode[span.status.code] },
    attributes: plain(span.attributes),
    links: span.links.map((l) => ({ traceId: l.context.traceId, spanId: l.context.spanId })),
    events: span.events.map((e) => ({ name: e.name, time: iso(e.time), attributes: plain(e.attributes ?? {}) })),
  };
  if (span.parentSpanContext) line.parentSpanId = span.parentSpanContext.spanId;
  if (span.status.message) line.status.message = span.status.message;
  return line;
}

/** Appends lines to a file shared by several processes: one `write` per batch keeps lines whole. */
class LineFile {
  private fd: number | undefined;
  constructor(private readonly path: string) {}
  append(lines: string[]): void {
    if (lines.length === 0) return;
    if (this.fd === undefined) {
      mkdirSync(dirname(this.path), { recursive: true });
      this.fd = openSync(this.path, 'a', 0o600);
    }
    writeSync(this.fd, lines.map((l) => `${l}\n`).join(''));
  }
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}

/** Writes each finished span as one JSON line (see {@link spanLine}). */
export class FileSpanExporter implements SpanExporter {
  private readonly file: LineFile;
  constructor(path: string) {
    this.file = new LineFile(path);
  }
  export(spans: ReadableSpan[], done: (result: ExportResult) => void): void {
    try {
      this.file.append(spans.map((s) => JSON.stringify(spanLine(s))));
      done(SUCCESS);
    } catch (err) {
      done(failed(err instanceof Error ? err : new Error(String(err))));
    }
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    this.file.close();
    return Promise.resolve();
  }
}

/** Writes one JSON line per metric data point: `{time, service, name, unit, attributes, value}`. */
export class FileMetricExporter implements PushMetricExporter {
  private readonly file: LineFile;
  constructor(path: string) {
    this.file = new LineFile(path);
  }
  export(metrics: ResourceMetrics, done: (result: ExportResult) => void): void {
    const service = String(metrics.resource.attributes['service.name'] ?? 'unknown');
    const lines: string[] = [];
    for (const scope of metrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        for (const point of metric.dataPoints) {
          const v = point.value;
          const value = typeof v === 'number' ? v : { count: v.count, sum: v.sum, min: v.min, max: v.max };
          lines.push(
            JSON.stringify({
              time: iso(point.endTime),
              service,
              name: metric.descriptor.name,
              unit: metric.descriptor.unit,
              attributes: plain(point.attributes),
              value,
            }),
          );
        }
      }
    }
    try {
      this.file.append(lines);
      done(SUCCESS);
    } catch (err) {
      done(failed(err instanceof Error ? err : new Error(String(err))));
    }
  }
  forceFlush(): Promise<void> {
    return Promise.resolve();
  }
  shutdown(): Promise<void> {
    this.file.close();
    return Promise.resolve();
  }
}
