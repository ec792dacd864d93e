import { context, SpanKind, trace } from '@opentelemetry/api';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { PubSub } from '@google-cloud/pubsub';
import { recordSpans } from '../../test/support/span-recorder.js';
import { createPubSubBus } from '../bus/pubsub.js';
import { attributesFromContext, contextFromAttributes, linkTo, traceIdOf, traceparentOf } from './propagation.js';
import { inSpan, inTraceOf, tracer } from './spans.js';

const TRACE = '4bf92f3577b34da6a3ce929d0e0e4736';
const PARENT = '00f067aa0ba902b7';
const TRACEPARENT = `00-${TRACE}-${PARENT}-01`;
const recorder = recordSpans();

beforeEach(() => recorder.clear());
afterAll(() => recorder.stop());

describe('contextFromAttributes', () => {
  it.each([
    ['a valid traceparent', { traceparent: TRACEPARENT }, TRACE],
    ['with other attributes', { traceparent: TRACEPARENT, relay: 'local', action: 'apply' }, TRACE],
    ['no traceparent', { relay: 'local' }, undefined],
    ['a malformed traceparent', { traceparent: 'not-a-trace' }, undefined],
    ['an all-zero trace id', { traceparent: `00-${'0'.repeat(32)}-${PARENT}-01` }, undefined],
  ])('%s', (_name, attributes, traceId) => {
    const span = trace.getSpanContext(contextFromAttributes(attributes));
    expect(span?.traceId).toBe(traceId);
    if (traceId) expect(span).toMatchObject({ spanId: PARENT, isRemote: true, traceFlags: 1 });
  });

  it('does not inherit the active trace when the message has none', async () => {
    await inSpan('outer', {}, () => {
      expect(trace.getSpanContext(contextFromAttributes({}))).toBeUndefined();
      return Promise.resolve();
    });
  });
});

describe('attributesFromContext and traceparentOf', () => {
  it('round-trips a context through message attributes', () => {
    expect(attributesFromContext(contextFromAttributes({ traceparent: TRACEPARENT }))).toEqual({
      traceparent: TRACEPARENT,
    });
  });

  it('gives the active span, and nothing outside a span', async () => {
    expect(traceparentOf()).toBeUndefined();
    await inSpan('work', { parent: contextFromAttributes({ traceparent: TRACEPARENT }) }, (span) => {
      expect(traceparentOf()).toBe(`00-${TRACE}-${span.spanContext().spanId}-01`);
      return Promise.resolve();
    });
  });
});

describe('traceIdOf', () => {
  it.each([
    [TRACEPARENT, TRACE],
    [`00-${TRACE}-${PARENT}-00`, TRACE],
    [`01-${TRACE}-${PARENT}-01`, undefined],
    [`00-${TRACE.toUpperCase()}-${PARENT}-01`, undefined],
    ['', undefined],
  ])('%j → %s', (traceparent, id) => expect(traceIdOf(traceparent)).toBe(id));

  it('linkTo names the span of a traceparent', () => {
    expect(linkTo(TRACEPARENT)?.context).toMatchObject({ traceId: TRACE, spanId: PARENT });
    expect(linkTo('garbage')).toBeUndefined();
  });
});

describe('the Pub/Sub bus', () => {
  const published: { topic: string; attributes: Record<string, string> }[] = [];
  const fake = {
    topic: (topic: string) => ({
      publishMessage: (m: { attributes: Record<string, string> }) => {
        published.push({ topic, attributes: m.attributes });
        return Promise.resolve(`id-${published.length}`);
      },
    }),
  };
  const bus = createPubSubBus(fake as unknown as PubSub);

  it('publishes in a PRODUCER span whose context travels in the attributes', async () => {
    published.length = 0;
    await context.with(contextFromAttributes({ traceparent: TRACEPARENT }), () =>
      bus.publish('proxy-checks', { names: ['a'] }, { relay: 'local' }),
    );
    const [send] = recorder.named('send proxy-checks');
    expect(send?.kind).toBe(SpanKind.PRODUCER);
    expect(send?.spanContext().traceId).toBe(TRACE);
    expect(send?.parentSpanContext?.spanId).toBe(PARENT);
    expect(send?.attributes).toMatchObject({
      'messaging.system': 'gcp_pubsub',
      'messaging.destination.name': 'proxy-checks',
      'messaging.message.id': 'id-1',
    });
    expect(published[0]?.attributes).toEqual({
      relay: 'local',
      traceparent: `00-${TRACE}-${send?.spanContext().spanId}-01`,
    });
  });

  it('starts a new trace when nothing is active', async () => {
    published.length = 0;
    await bus.publish('gc-ticks', {});
    expect(traceIdOf(published[0]?.attributes['traceparent'] ?? '')).toBeDefined();
    expect(traceIdOf(published[0]?.attributes['traceparent'] ?? '')).not.toBe(TRACE);
  });
});

describe('inTraceOf', () => {
  it('runs directly when the trace is already the active one', async () => {
    await inSpan('invocation', { parent: contextFromAttributes({ traceparent: TRACEPARENT }) }, () =>
      inTraceOf(TRACEPARENT, 'kick checks', () => Promise.resolve()),
    );
    expect(recorder.named('kick checks')).toHaveLength(0);
  });

  it('continues another trace in a span linked back to the active one', async () => {
    let outer = '';
    await tracer().startActiveSpan('invocation', async (span) => {
      outer = span.spanContext().spanId;
      await inTraceOf(TRACEPARENT, 'kick checks', () => Promise.resolve());
      span.end();
    });
    const [kick] = recorder.named('kick checks');
    expect(kick?.spanContext().traceId).toBe(TRACE);
    expect(kick?.parentSpanContext?.spanId).toBe(PARENT);
    expect(kick?.links.map((l) => l.context.spanId)).toEqual([outer]);
  });
});
