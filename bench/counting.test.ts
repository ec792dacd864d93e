/** Billable units of a message and an invocation, as the bench counts them. */
import { describe, expect, it } from 'vitest';
import { countInvocation, countMessage, diffCounts, zeroCounts } from './counting.js';

describe('counting', () => {
  it('bills a small message 1000 bytes per publish and per subscription delivery', () => {
    const c = zeroCounts();
    countMessage(c, 'proxy-checks', '{"sweep":true}', {});
    // proxy-checks has one subscription: publish + one delivery.
    expect(c).toMatchObject({ messages: 1, pubsubBytes: 2000 });
    countMessage(c, 'proxy-requests', '{}', {});
    // proxy-requests has two subscriptions.
    expect(c).toMatchObject({ messages: 2, pubsubBytes: 5000 });
  });

  it('bills a large message by its size: body, attributes, timestamp and id', () => {
    const c = zeroCounts();
    countMessage(c, 'relay-reports', 'x'.repeat(5000), { relay: 'r1' });
    expect(c.pubsubBytes).toBe((5000 + 7 + 20 + 16) * 2);
  });

  it('rounds each invocation up to 100 ms, as billed', () => {
    const c = zeroCounts();
    countInvocation(c, 1000, 1001);
    countInvocation(c, 1000, 1250);
    expect(c).toMatchObject({ invocations: 2, invocationMs: 400 });
    expect(diffCounts(c, { ...c, invocations: 1, invocationMs: 100 })).toMatchObject({
      invocations: 1,
      invocationMs: 300,
      reads: 0,
    });
  });
});
