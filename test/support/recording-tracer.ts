/** A minimal OpenTelemetry tracer provider that records span names, attributes and status, for assertions. */
import {
  trace,
  type Attributes,
  type AttributeValue,
  type Context,
  type Span,
  type SpanContext,
  type SpanOptions,
  type SpanStatus,
  type Tracer,
  type TracerProvider,
} from '@opentelemetry/api';

/** What a test can see of one span. */
export interface RecordedSpan {
  tracer: string;
  name: string;
  attributes: Attributes;
  status?: SpanStatus | undefined;
  ended: boolean;
}

class RecordingSpan implements Span {
  constructor(private readonly record: RecordedSpan) {}
  spanContext(): SpanContext {
    return { traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1 };
  }
  setAttribute(key: string, value: AttributeValue): this {
    this.record.attributes[key] = value;
    return this;
  }
  setAttributes(attributes: Attributes): this {
    Object.assign(this.record.attributes, attributes);
    return this;
  }
  addEvent(): this {
    return this;
  }
  addLink(): this {
    return this;
  }
  addLinks(): this {
    return this;
  }
  setStatus(status: SpanStatus): this {
    this.record.status = status;
    return this;
  }
  updateName(name: string): this {
    this.record.name = name;
    return this;
  }
  end(): void {
    this.record.ended = true;
  }
  isRecording(): boolean {
    return true;
  }
  recordException(): void {}
}

/**
 * Installs a global tracer provider that records every span started from now on.
 *
 * @returns the recorded spans (live), `clear()` to forget them, and `stop()` to remove the provider again
 */
export function recordSpans(): { spans: RecordedSpan[]; clear(): void; stop(): void } {
  const spans: RecordedSpan[] = [];
  const tracerFor = (tracerName: string): Tracer => {
    const startSpan = (name: string, options?: SpanOptions): Span => {
      const record: RecordedSpan = { tracer: tracerName, name, attributes: { ...options?.attributes }, ended: false };
      spans.push(record);
      return new RecordingSpan(record);
    };
    function startActiveSpan<F extends (span: Span) => unknown>(name: string, fn: F): ReturnType<F>;
    function startActiveSpan<F extends (span: Span) => unknown>(name: string, o: SpanOptions, fn: F): ReturnType<F>;
    function startActiveSpan<F extends (span: Span) => unknown>(
      name: string,
      o: SpanOptions,
      c: Context,
      fn: F,
    ): ReturnType<F>;
    function startActiveSpan<F extends (span: Span) => unknown>(
      name: string,
      ...args: [F] | [SpanOptions, F] | [SpanOptions, Context, F]
    ): ReturnType<F> {
      const fn = args[args.length - 1] as F;
      const options = args.length > 1 ? (args[0] as SpanOptions) : undefined;
      return fn(startSpan(name, options)) as ReturnType<F>;
    }
    return { startSpan, startActiveSpan };
  };
  const provider: TracerProvider = { getTracer: (name) => tracerFor(name) };
  // Tracers taken before (module level) follow the first provider registered; only when another one
  // is already registered is it replaced, which such tracers do not follow.
  if (!trace.setGlobalTracerProvider(provider)) {
    trace.disable();
    trace.setGlobalTracerProvider(provider);
  }
  return {
    spans,
    clear: () => void (spans.length = 0),
    stop: () => trace.disable(),
  };
}
