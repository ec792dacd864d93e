/**
 * Records the wire form of every query and aggregation the Firestore client runs (a query's `get` and
 * transaction reads end in its `_getResponse`, `stream` is its own; an aggregation's end in its
 * `_stream`), so a test can derive the indexes the store's real queries need.
 */
import { type AggregateQuery, type AggregateSpec, Firestore, Query } from '@google-cloud/firestore';
import { expect } from 'vitest';

/** A query as run: its `StructuredQuery` (the proto `Query.toProto()` sends) and the test that ran it. */
export interface RecordedQuery {
  structuredQuery: unknown;
  source: string;
}

interface Protoable {
  toProto(): { structuredQuery?: unknown };
}

/**
 * Starts recording; the returned function stops it.
 *
 * @param out - where each run query is appended
 */
export function recordQueries(out: RecordedQuery[]): () => void {
  // AggregateQuery is a type only in the package's exports: its prototype comes from an instance
  // (building a query opens no connection).
  const aggregate = Object.getPrototypeOf(new Firestore({ projectId: 'recorder' }).collection('c').count()) as object;
  const targets: [object, string, (self: unknown) => unknown][] = [
    [Query.prototype, '_getResponse', (self) => self],
    [Query.prototype, 'stream', (self) => self],
    [aggregate, '_stream', (self) => (self as AggregateQuery<AggregateSpec>).query],
  ];
  const restores = targets.map(([proto, method, queryOf]) => {
    const original: unknown = Reflect.get(proto, method);
    if (typeof original !== 'function') throw new Error(`@google-cloud/firestore: no ${method} to record queries at`);
    Reflect.set(proto, method, function (this: unknown, ...args: unknown[]): unknown {
      const query = queryOf(this) as Protoable;
      out.push({ structuredQuery: query.toProto().structuredQuery, source: expect.getState().currentTestName ?? '?' });
      return (original as (...a: unknown[]) => unknown).apply(this, args);
    });
    return () => Reflect.set(proto, method, original);
  });
  return () => {
    for (const restore of restores) restore();
  };
}
