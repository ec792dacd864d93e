/** W3C trace context in Pub/Sub message attributes: reading it on receipt, writing it on publish. */
import { context, propagation, ROOT_CONTEXT, trace, type Context, type Link } from '@opentelemetry/api';

/** The attribute (and HTTP header) carrying the W3C trace context. */
export const TRACEPARENT = 'traceparent';

const TRACEPARENT_PATTERN = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/**
 * The context a received message continues: its `traceparent` (and `tracestate`) attributes on top
 * of `base`. A message without them, or with a malformed one, yields `base` unchanged.
 *
 * @param attributes - the message attributes (untrusted: only the two W3C keys are read)
 * @param base - defaults to the root context, so one message never inherits another's trace
 */
export function contextFromAttributes(attributes: Record<string, string>, base: Context = ROOT_CONTEXT): Context {
  const carrier: Record<string, string> = {};
  for (const key of [TRACEPARENT, 'tracestate']) {
    const value = attributes[key];
    if (typeof value === 'string') carrier[key] = value;
  }
  return propagation.extract(base, carrier);
}

/** The attributes that carry `ctx` on (empty when it holds no valid span or no propagator is set). */
export function attributesFromContext(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The `traceparent` of `ctx`, if it holds a valid span. */
export function traceparentOf(ctx: Context = context.active()): string | undefined {
  return attributesFromContext(ctx)[TRACEPARENT];
}

/** The trace id in a `traceparent` value, or undefined when it is not a valid version-00 one. */
export function traceIdOf(traceparent: string): string | undefined {
  const match = TRACEPARENT_PATTERN.exec(traceparent);
  return match && !/^0+$/.test(match[1] ?? '0') ? match[1] : undefined;
}

/** A span link to the span a `traceparent` names (for work that serves several traces at once). */
export function linkTo(traceparent: string): Link | undefined {
  const span = trace.getSpanContext(contextFromAttributes({ [TRACEPARENT]: traceparent }));
  return span ? { context: span } : undefined;
}
