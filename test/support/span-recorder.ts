/** An in-memory span recorder on the real SDK (parents, links, status), for tests of spans and propagation. */
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
  type Span,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';

/** Recorded spans and how to stop recording. */
export interface SpanRecorder {
  /** Finished spans so far, in the order they ended. */
  spans(): ReadableSpan[];
  /** The finished spans named `name`. */
  named(name: string): ReadableSpan[];
  /** The direct children of `span`. */
  childrenOf(span: ReadableSpan): ReadableSpan[];
  /** The finished spans of the tracer (instrumentation scope) named `tracer`. */
  ofTracer(tracer: string): ReadableSpan[];
  /** Names of spans started and not yet ended (a span left open is a leak in the instrumentation). */
  open(): string[];
  clear(): void;
  stop(): Promise<void>;
}

/**
 * Installs, process-wide, an SDK tracer provider that keeps every finished span in memory, with
 * the AsyncLocalStorage context manager and the W3C propagator (as `startTelemetry` does).
 *
 * @example
 * const recorder = recordSpans();
 * await provider.create(spec);
 * expect(recorder.childrenOf(recorder.named('provider.create')[0]!).map((s) => s.name)).toContain('compute.insert');
 */
export function recordSpans(): SpanRecorder {
  const exporter = new InMemorySpanExporter();
  const started = new Set<Span>();
  const tracking: SpanProcessor = {
    onStart: (span) => void started.add(span),
    onEnd: (span) => void started.delete(span as Span),
    forceFlush: () => Promise.resolve(),
    shutdown: () => Promise.resolve(),
  };
  const provider = new BasicTracerProvider({ spanProcessors: [tracking, new SimpleSpanProcessor(exporter)] });
  trace.disable();
  context.disable();
  propagation.disable();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  const spans = () => exporter.getFinishedSpans();
  return {
    spans,
    named: (name) => spans().filter((s) => s.name === name),
    childrenOf: (parent) => spans().filter((s) => s.parentSpanContext?.spanId === parent.spanContext().spanId),
    ofTracer: (tracer) => spans().filter((s) => s.instrumentationScope.name === tracer),
    open: () => [...started].map((s) => s.name),
    clear: () => {
      exporter.reset();
      started.clear();
    },
    async stop() {
      await provider.shutdown();
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
