import { afterAll, describe, expect, it } from 'vitest';
import { recordSpans } from '../test/support/span-recorder.js';
import type { InventoryItem } from '../shared/wire/protocol.js';
import { TraceBook } from './traces.js';

const TP = (n: number) => `00-${String(n).padStart(32, '0')}-00f067aa0ba902b7-01`;
const item = (name: string, state: InventoryItem['state'], ok?: boolean): InventoryItem => ({
  name,
  proxy: name,
  installationId: 'local',
  specHash: 'h',
  state,
  ip: '127.0.0.1',
  port: 1,
  createdAt: 1,
  provider: 'local',
  ...(ok === undefined ? {} : { health: { ok, lastProbeAt: '2026-01-01T00:00:00Z', consecutiveFailures: 0 } }),
});

// Registers the W3C propagator that links are parsed with.
const recorder = recordSpans();
afterAll(() => recorder.stop());

describe('TraceBook', () => {
  it('keeps a trace until a report built after its command finished shows the instance Running and probed ok', () => {
    const book = new TraceBook();
    book.remember('a', TP(1));
    const during = book.mark();
    // A report built while the create runs does not list the instance yet: that settles nothing.
    book.settle({ instances: [] }, during);
    expect(book.get('a')).toBe(TP(1));
    book.finished('a');
    book.settle({ instances: [item('a', 'Running')] }, book.mark());
    expect(book.live()).toEqual({ a: TP(1) });
    book.settle({ instances: [item('a', 'Running', false)] }, book.mark());
    expect(book.get('a')).toBe(TP(1));
    book.settle({ instances: [item('a', 'Running', true)] }, book.mark());
    expect(book.get('a')).toBeUndefined();
  });

  it('forgets an instance a report no longer lists once its command (a delete) finished', () => {
    const book = new TraceBook();
    book.remember('a', TP(1));
    book.finished('a');
    book.settle({ instances: [] }, book.mark());
    expect(book.live()).toEqual({});
  });

  it('forgets expired traces, ignores commands without one, and names the first result trace as parent', () => {
    let now = 0;
    const book = new TraceBook(1000, () => now);
    book.remember('a', TP(1));
    book.remember('b', TP(2));
    book.remember('c', undefined);
    expect(book.parentOf({ results: [{ name: 'c' }, { name: 'a' }, { name: 'b' }].map(result) })).toMatchObject({
      parent: TP(1),
      links: [{ context: { traceId: TP(2).slice(3, 35) } }],
    });
    now = 1000;
    expect(book.get('a')).toBeUndefined();
    book.settle({ instances: [] }, book.mark());
    expect(book.live()).toEqual({});
  });
});

function result(r: { name: string }) {
  return { commandId: 'c', provider: 'local', name: r.name, kind: 'create' as const, ok: true };
}
