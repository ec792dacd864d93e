/** Starts OpenTelemetry once per process: W3C propagation always, span and metric export as configured. */
import { randomUUID } from 'node:crypto';
import { context, diag, DiagLogLevel, metrics, propagation, trace, type DiagLogger } from '@opentelemetry/api';
import type { Logger } from '../logger.js';
import type { TelemetryConfig } from './config.js';

/** The running telemetry of this process. */
export interface Telemetry {
  readonly config: TelemetryConfig;
  /** Exports the spans still buffered; a function calls it before its invocation ends. */
  flush(): Promise<void>;
  /** Flushes spans and metrics and stops exporting. */
  shutdown(): Promise<void>;
}

/** Who this process is: `service` becomes `service.name`, e.g. `egress-check` or `egress-relay`. */
export interface TelemetryOptions {
  service: string;
  config: TelemetryConfig;
  /** Where export failures are reported (WARNING). */
  logger?: Logger;
}

let running: Promise<Telemetry> | undefined;

/**
 * Starts telemetry for this process; later calls return the first one's result. The SDK is
 * imported here, dynamically, so importing a function costs nothing; the Google Cloud exporters
 * are imported on their first export, and only in `gcp` mode.
 *
 * @example
 * const telemetry = await startTelemetry({ service: 'egress-relay', config: loadTelemetryConfig() });
 */
export function startTelemetry(options: TelemetryOptions): Promise<Telemetry> {
  running ??= start(options);
  return running;
}

async function start({ service, config, logger }: TelemetryOptions): Promise<Telemetry> {
  if (logger) diag.setLogger(diagLogger(logger), DiagLogLevel.WARN);
  const [{ AsyncLocalStorageContextManager }, { W3CTraceContextPropagator }] = await Promise.all([
    import('@opentelemetry/context-async-hooks'),
    import('@opentelemetry/core'),
  ]);
  // Even without export, an incoming traceparent must reach log lines and outgoing messages.
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  if (config.mode === 'none') return { config, flush: () => Promise.resolve(), shutdown: () => Promise.resolve() };

  const [traceSdk, metricSdk, resources, files] = await Promise.all([
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/sdk-metrics'),
    import('@opentelemetry/resources'),
    import('./file-exporter.js'),
  ]);
  let resource = resources.resourceFromAttributes({
    'service.name': service,
    'service.namespace': 'egress',
    'service.instance.id': randomUUID(),
  });
  if (config.mode === 'gcp') {
    const { GcpDetectorSync } = await import('@google-cloud/opentelemetry-resource-util');
    resource = resource.merge(resources.detectResources({ detectors: [new GcpDetectorSync()] }));
  }
  const exporters = config.mode === 'gcp' ? gcpExporters(config) : fileExporters(config, files);
  const tracerProvider = new traceSdk.BasicTracerProvider({
    resource,
    sampler: new traceSdk.ParentBasedSampler({ root: new traceSdk.TraceIdRatioBasedSampler(config.sampleRatio) }),
    spanProcessors: [
      config.mode === 'gcp'
        ? new traceSdk.BatchSpanProcessor(exporters.spans)
        : new traceSdk.SimpleSpanProcessor(exporters.spans),
    ],
  });
  trace.setGlobalTracerProvider(tracerProvider);
  const meterProvider = exporters.metrics
    ? new metricSdk.MeterProvider({
        resource,
        readers: [
          new metricSdk.PeriodicExportingMetricReader({
            exporter: exporters.metrics,
            exportIntervalMillis: config.metricIntervalMs,
            exportTimeoutMillis: Math.min(30_000, config.metricIntervalMs),
          }),
        ],
      })
    : undefined;
  if (meterProvider) metrics.setGlobalMeterProvider(meterProvider);
  return {
    config,
    flush: () => tracerProvider.forceFlush(),
    async shutdown() {
      await Promise.allSettled([tracerProvider.shutdown(), meterProvider?.shutdown()]);
    },
  };
}

type SpanExporter = import('@opentelemetry/sdk-trace-base').SpanExporter;
type MetricExporter = import('@opentelemetry/sdk-metrics').PushMetricExporter;
type Files = typeof import('./file-exporter.js');

function fileExporters(config: TelemetryConfig, files: Files): { spans: SpanExporter; metrics?: MetricExporter } {
  const spans = new files.FileSpanExporter(config.traceFile ?? 'spans.jsonl');
  return config.metricsFile ? { spans, metrics: new files.FileMetricExporter(config.metricsFile) } : { spans };
}

/** Cloud Trace and Cloud Monitoring, each loaded when it first has something to send. */
function gcpExporters(config: TelemetryConfig): { spans: SpanExporter; metrics: MetricExporter } {
  const projectId = config.project ? { projectId: config.project } : {};
  let spans: Promise<SpanExporter> | undefined;
  let metricsExporter: Promise<MetricExporter> | undefined;
  const loadSpans = () =>
    (spans ??= import('@google-cloud/opentelemetry-cloud-trace-exporter').then((m) => new m.TraceExporter(projectId)));
  const loadMetrics = () =>
    (metricsExporter ??= import('@google-cloud/opentelemetry-cloud-monitoring-exporter').then(
      (m) => new m.MetricExporter(projectId),
    ));
  return {
    spans: {
      export: (batch, done) =>
        void loadSpans().then(
          (e) => e.export(batch, done),
          (err: unknown) => done(loadFailed(err)),
        ),
      forceFlush: async () => (spans ? (await spans).forceFlush?.() : undefined),
      shutdown: async () => (spans ? (await spans).shutdown() : undefined),
    },
    metrics: {
      export: (batch, done) =>
        void loadMetrics().then(
          (e) => e.export(batch, done),
          (err: unknown) => done(loadFailed(err)),
        ),
      forceFlush: async () => (metricsExporter ? (await metricsExporter).forceFlush() : undefined),
      shutdown: async () => (metricsExporter ? (await metricsExporter).shutdown() : undefined),
    },
  };
}

function loadFailed(err: unknown): { code: 1; error: Error } {
  return { code: 1, error: err instanceof Error ? err : new Error(String(err)) };
}

/** OpenTelemetry's own complaints (an export that failed) as WARNING lines of our logger. */
function diagLogger(logger: Logger): DiagLogger {
  const warn = (message: string, ...args: unknown[]) =>
    logger.warn(`telemetry: ${message}`, args.length > 0 ? { detail: args.map(String).join(' ') } : {});
  return { error: warn, warn, info: () => {}, debug: () => {}, verbose: () => {} };
}
