/** Small helpers for our own spans: run a function inside a span, record its outcome, end it. */
import {
  context,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Context,
  type Link,
  type Span,
} from '@opentelemetry/api';
import { EgressError } from '../errors.js';
import { contextFromAttributes, traceIdOf, TRACEPARENT } from './propagation.js';

/** The tracer of this product (one instrumentation scope for all of it). */
export function tracer() {
  return trace.getTracer('egress');
}

/** How to start a span. */
export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  links?: Link[];
  /** The parent; the active context by default. */
  parent?: Context;
}

/**
 * Runs `fn` inside a new active span and ends it. A thrown error marks the span as failed (with
 * `error.type` and the message), except `NotFound`, which is an answer, not a failure; the error
 * is rethrown unchanged.
 *
 * @example
 * const item = await inSpan('firestore.get relays/instances', { kind: SpanKind.CLIENT }, () => ref.get());
 */
export function inSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const { parent, ...start } = options;
  return tracer().startActiveSpan(name, start, parent ?? context.active(), async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      markFailed(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

/** Records a failure on `span` (never the error's cause, which may carry request details). */
export function markFailed(span: Span, err: unknown): void {
  const code = err instanceof EgressError ? err.code : err instanceof Error ? err.name : 'Error';
  span.setAttribute('error.type', code);
  if (code === 'NotFound') return;
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/**
 * A child span around one call to a backend (a cloud API request, a Firestore read, a process
 * spawn): kind CLIENT, named after the call. What every provider adds under its operation spans.
 *
 * @param name - `<system>.<operation> <target>`, e.g. `firestore.get relays/{relay}/instances`
 */
export function backendCall<T>(name: string, attributes: Attributes, fn: () => Promise<T>): Promise<T> {
  return inSpan(name, { kind: SpanKind.CLIENT, attributes }, () => fn());
}

/**
 * {@link backendCall} for one Firestore call: `firestore.<operation> <collection>`, with the
 * database semantic-convention attributes.
 */
export function firestoreCall<T>(operation: string, collection: string, fn: () => Promise<T>): Promise<T> {
  return backendCall(
    `firestore.${operation} ${collection}`,
    { 'db.system.name': 'firestore', 'db.operation.name': operation, 'db.collection.name': collection },
    fn,
  );
}

/**
 * Runs `fn` in the trace `traceparent` names, when that is not the active trace already: inside a
 * span `name` whose parent is that remote span and which links back to the active span. Used where
 * one invocation serves several traces (a relay report settling instances of several applies).
 */
export function inTraceOf<T>(traceparent: string | undefined, name: string, fn: () => Promise<T>): Promise<T> {
  const active = trace.getSpanContext(context.active());
  if (!traceparent || traceIdOf(traceparent) === undefined || traceIdOf(traceparent) === active?.traceId) return fn();
  return inSpan(
    name,
    { parent: contextFromAttributes({ [TRACEPARENT]: traceparent }), links: active ? [{ context: active }] : [] },
    () => fn(),
  );
}
