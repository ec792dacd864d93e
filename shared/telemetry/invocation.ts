/** One span per function invocation: the Pub/Sub message's trace continued, failures logged as JSON. */
import { SpanKind, type Attributes, type Span } from '@opentelemetry/api';
import { z } from 'zod';
import { decodeBody, decodeCloudEvent, type BusMessage } from '../bus/message.js';
import { RetryableError, ValidationError } from '../errors.js';
import { formatLogLine } from '../logger.js';
import { contextFromAttributes } from './propagation.js';
import { inSpan, markFailed } from './spans.js';

/** The parts of a CloudEvent an invocation reads (functions-framework's `CloudEvent` fits). */
export interface CloudEventLike {
  id?: string;
  source?: string;
  type?: string;
  time?: string;
  data?: unknown;
}

/** Who is invoked, and how its lines are written. */
export interface InvocationOptions {
  /** The function's name (`check`), also the `function` field of the failure line. */
  function: string;
  /** The project of the `logging.googleapis.com/trace` field. */
  project: string;
  /** True for the first invocation of the process (`faas.coldstart`). */
  coldStart?: boolean;
}

const envelope = z.object({ subscription: z.string().optional() });

/** `//pubsub.googleapis.com/projects/P/topics/T` → `T`; anything else → undefined. */
export function topicOfSource(source: string | undefined): string | undefined {
  return /\/topics\/([^/]+)$/.exec(source ?? '')?.[1];
}

/** Messaging semantic-convention attributes of a received Pub/Sub message. */
export function messagingAttributes(message: BusMessage, topic?: string, subscription?: string): Attributes {
  const attributes: Attributes = {
    'messaging.system': 'gcp_pubsub',
    'messaging.operation.type': 'process',
    'messaging.operation.name': 'process',
    'messaging.message.id': message.id,
    'messaging.message.body.size': Buffer.byteLength(message.text),
  };
  if (topic) attributes['messaging.destination.name'] = topic;
  if (subscription) attributes['messaging.destination.subscription.name'] = subscription.split('/').pop() ?? '';
  return attributes;
}

/**
 * An error for functions-framework to print. The framework writes a failed invocation's `stack`
 * to stderr as it is; this one's `stack` is a complete Cloud Logging JSON line, so the output
 * stays JSON and keeps the trace. The message still makes the framework answer 500, which is how
 * a push subscription is asked to redeliver.
 */
export class ReportedFailure extends Error {
  constructor(message: string, line: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ReportedFailure';
    this.stack = line;
  }
}

/**
 * Runs `handler` for one Pub/Sub CloudEvent inside a CONSUMER span `process <topic>`, the child of
 * the `traceparent` in the message attributes (a new trace when there is none). A thrown
 * `RetryableError` is the handler asking for redelivery: an INFO line, span not failed. Any other
 * error is an ERROR line with its stack and a failed span. Either way a {@link ReportedFailure}
 * is thrown on, so Pub/Sub redelivers. An event that is not a Pub/Sub envelope reaches the handler
 * as a message with `decodeError` set (the handlers reject such messages; ticks ignore them).
 */
export async function traceInvocation(
  event: CloudEventLike,
  options: InvocationOptions,
  handler: (message: BusMessage, span: Span) => Promise<unknown>,
): Promise<void> {
  const message = decodeOrEmpty(event);
  const topic = topicOfSource(event.source);
  const subscription = envelope.safeParse(event.data).data?.subscription;
  const attributes: Attributes = {
    ...messagingAttributes(message, topic, subscription),
    'faas.trigger': 'pubsub',
    'faas.name': options.function,
    'faas.invocation_id': event.id ?? message.id,
    'faas.coldstart': options.coldStart === true,
  };
  let failure: ReportedFailure | undefined;
  await inSpan(
    `process ${topic ?? options.function}`,
    { kind: SpanKind.CONSUMER, attributes, parent: contextFromAttributes(message.attributes) },
    async (span) => {
      try {
        const outcome = await handler(message, span);
        if (typeof outcome === 'string') span.setAttribute('egress.outcome', outcome);
      } catch (err) {
        failure = reportFailure(err, span, options, message.id);
      }
    },
  );
  if (failure) throw failure;
}

/** The message, or an empty one carrying `decodeError` when the envelope is not Pub/Sub's (a tick). */
function decodeOrEmpty(event: CloudEventLike): BusMessage {
  try {
    return decodeCloudEvent(event);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    return { ...decodeBody(event.id ?? '', Date.now(), {}, ''), decodeError: err.reason };
  }
}

/** Marks the span and builds the JSON line the framework will print for this failure. */
function reportFailure(err: unknown, span: Span, options: InvocationOptions, messageId: string): ReportedFailure {
  const base = { project: options.project, base: { function: options.function } };
  if (err instanceof RetryableError) {
    span.setAttribute('egress.redelivery_requested', true);
    span.addEvent('redelivery requested', { 'egress.retry_after_ms': err.retryAfterMs });
    const line = formatLogLine(base, 'INFO', 'asking Pub/Sub to redeliver', {
      messageId,
      reason: err.message,
      retryAfterMs: err.retryAfterMs,
    });
    return new ReportedFailure(err.message, line, { cause: err });
  }
  markFailed(span, err);
  const error = err instanceof Error ? err : new Error(String(err));
  const line = formatLogLine(base, 'ERROR', `invocation failed: ${error.message}`, {
    messageId,
    error,
    stack_trace: error.stack ?? `${error.name}: ${error.message}`,
  });
  return new ReportedFailure(error.message, line, { cause: err });
}
