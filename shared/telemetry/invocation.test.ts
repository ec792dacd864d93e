import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { recordSpans } from '../../test/support/span-recorder.js';
import { RetryableError } from '../errors.js';
import { createLogger } from '../logger.js';
import { ReportedFailure, topicOfSource, traceInvocation, type CloudEventLike } from './invocation.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const recorder = recordSpans();
const options = { function: 'check', project: 'demo-egress' };

beforeEach(() => recorder.clear());
afterAll(() => recorder.stop());

function event(attributes: Record<string, string>, body: unknown = { names: ['a'] }): CloudEventLike {
  return {
    id: 'evt-1',
    source: '//pubsub.googleapis.com/projects/demo-egress/topics/proxy-checks',
    type: 'google.cloud.pubsub.topic.v1.messagePublished',
    data: {
      subscription: 'projects/demo-egress/subscriptions/check-batches',
      message: { data: Buffer.from(JSON.stringify(body)).toString('base64'), attributes, messageId: 'm-7' },
    },
  };
}

async function failureOf(run: Promise<void>): Promise<ReportedFailure> {
  const err: unknown = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ReportedFailure)) throw new Error(`expected a ReportedFailure, got ${String(err)}`);
  return err;
}

describe('traceInvocation', () => {
  it('continues the message trace in a CONSUMER span with messaging attributes; lines inside carry it', async () => {
    const lines: string[] = [];
    const logger = createLogger({ project: 'demo-egress', write: (l) => lines.push(l) });
    let seen: unknown;
    await traceInvocation(event({ traceparent: `00-${TRACE}-${PARENT}-01` }), options, (message) => {
      seen = message.json;
      logger.info('inside');
      return Promise.resolve('done');
    });
    expect(seen).toEqual({ names: ['a'] });
    const [span] = recorder.named('process proxy-checks');
    expect(span?.kind).toBe(SpanKind.CONSUMER);
    expect(span?.spanContext().traceId).toBe(TRACE);
    expect(span?.parentSpanContext?.spanId).toBe(PARENT);
    expect(span?.attributes).toMatchObject({
      'messaging.system': 'gcp_pubsub',
      'messaging.operation.type': 'process',
      'messaging.destination.name': 'proxy-checks',
      'messaging.destination.subscription.name': 'check-batches',
      'messaging.message.id': 'm-7',
      'faas.trigger': 'pubsub',
      'faas.invocation_id': 'evt-1',
      'egress.outcome': 'done',
    });
    expect(JSON.parse(lines[0] ?? '{}')).toMatchObject({
      message: 'inside',
      'logging.googleapis.com/trace': `projects/demo-egress/traces/${TRACE}`,
      'logging.googleapis.com/spanId': span?.spanContext().spanId,
      'logging.googleapis.com/trace_sampled': true,
    });
  });

  it('starts a new trace for a message without traceparent', async () => {
    await traceInvocation(event({}), options, () => Promise.resolve());
    const [span] = recorder.named('process proxy-checks');
    expect(span?.parentSpanContext).toBeUndefined();
    expect(span?.spanContext().traceId).not.toBe(TRACE);
  });

  it('turns a RetryableError into one INFO JSON line for the framework to print; the span is not failed', async () => {
    const failure = await failureOf(
      traceInvocation(event({ traceparent: `00-${TRACE}-${PARENT}-01` }), options, () =>
        Promise.reject(new RetryableError('look again soon', 2000)),
      ),
    );
    expect(failure.stack?.includes('\n')).toBe(false);
    expect(JSON.parse(failure.stack ?? '')).toMatchObject({
      severity: 'INFO',
      function: 'check',
      messageId: 'm-7',
      retryAfterMs: 2000,
      'logging.googleapis.com/trace': `projects/demo-egress/traces/${TRACE}`,
    });
    const [span] = recorder.named('process proxy-checks');
    expect(span?.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(span?.attributes['egress.redelivery_requested']).toBe(true);
  });

  it('turns any other error into one ERROR JSON line with its stack; the span is failed', async () => {
    const failure = await failureOf(traceInvocation(event({}), options, () => Promise.reject(new TypeError('boom'))));
    const line = JSON.parse(failure.stack ?? '') as Record<string, unknown>;
    expect(line).toMatchObject({ severity: 'ERROR', message: 'invocation failed: boom' });
    expect(String(line['stack_trace'])).toMatch(/^TypeError: boom\n\s+at /);
    expect(recorder.named('process proxy-checks')[0]?.status).toMatchObject({ code: SpanStatusCode.ERROR });
  });

  it('hands a tick that is no Pub/Sub envelope to the handler as an empty message', async () => {
    let decodeError: string | undefined;
    await traceInvocation({ id: 'tick', data: { hello: 1 } }, options, (message) => {
      decodeError = message.decodeError;
      return Promise.resolve();
    });
    expect(decodeError).toBe('not a Pub/Sub message envelope');
    expect(recorder.named('process check')).toHaveLength(1);
  });
});

describe('topicOfSource', () => {
  it.each([
    ['//pubsub.googleapis.com/projects/p/topics/relay-reports', 'relay-reports'],
    ['//pubsub.googleapis.com/projects/p', undefined],
    [undefined, undefined],
  ])('%s → %s', (source, topic) => expect(topicOfSource(source)).toBe(topic));
});
