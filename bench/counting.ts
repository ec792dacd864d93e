/** Counts billable Firestore operations per client and Pub/Sub messages, by wrapping the client libraries. */
import { DocumentReference, Firestore, Query, Transaction, WriteBatch } from '@google-cloud/firestore';

/** What one client did, in the units Firestore and Pub/Sub bill. */
export interface Counts {
  /** Documents read: one per document returned (at least one per query), one per aggregation. */
  reads: number;
  /** Documents created, set or updated (transactional writes included). */
  writes: number;
  deletes: number;
  /** Messages published. */
  messages: number;
  /** Billable Pub/Sub bytes: max(1000, size) per publish and again per subscription delivery. */
  pubsubBytes: number;
  /** Function invocations (one per message delivered to a function). */
  invocations: number;
  /** Their wall time in the bench, each rounded up to 100 ms as Cloud Run bills it. */
  invocationMs: number;
}

export function zeroCounts(): Counts {
  return { reads: 0, writes: 0, deletes: 0, messages: 0, pubsubBytes: 0, invocations: 0, invocationMs: 0 };
}

/** `a - b`, field by field. */
export function diffCounts(a: Counts, b: Counts): Counts {
  return {
    reads: a.reads - b.reads,
    writes: a.writes - b.writes,
    deletes: a.deletes - b.deletes,
    messages: a.messages - b.messages,
    pubsubBytes: a.pubsubBytes - b.pubsubBytes,
    invocations: a.invocations - b.invocations,
    invocationMs: a.invocationMs - b.invocationMs,
  };
}

/** Counts of the instrumented clients; a client not registered here is not counted. */
const ledger = new WeakMap<object, Counts>();
let patched = false;

/** Reads a private field of a library object (the libraries keep their client there). */
function field(target: object, key: string): unknown {
  return Reflect.get(target, key);
}

function countsOf(client: unknown): Counts | undefined {
  return typeof client === 'object' && client !== null ? ledger.get(client) : undefined;
}

/** The number of documents a query answer carries; an empty answer still bills one read. */
function documentsIn(result: unknown): number {
  const size: unknown = typeof result === 'object' && result !== null ? Reflect.get(result, 'size') : undefined;
  return typeof size === 'number' ? Math.max(1, size) : 1;
}

/** Replaces `proto[key]` with a wrapper that sees `this`, the arguments and the resolved value. */
function wrapAsync(proto: object, key: string, after: (self: object, args: unknown[], result: unknown) => void): void {
  const original: unknown = Reflect.get(proto, key);
  if (typeof original !== 'function')
    throw new Error(`@google-cloud/firestore has no ${key}(): update bench/counting.ts`);
  const call = (self: object, args: unknown[]): unknown => Reflect.apply(original, self, args);
  Reflect.set(proto, key, function (this: object, ...args: unknown[]) {
    const result = call(this, args);
    if (!(result instanceof Promise)) return result;
    return result.then((value: unknown) => {
      after(this, args, value);
      return value;
    });
  });
}

/**
 * Patches the Firestore classes once: `Firestore.getAll` (under `DocumentReference.get`),
 * `Query.get`, aggregation `get`, `Transaction.get`/`getAll`, and the commit under every write
 * path (`WriteBatch.commit`, `DocumentReference.set/update/create/delete`, transactions).
 */
function patchFirestore(): void {
  if (patched) return;
  patched = true;
  wrapAsync(Firestore.prototype, 'getAll', (self, _args, result) => {
    const c = countsOf(self);
    if (c && Array.isArray(result)) c.reads += result.length;
  });
  wrapAsync(Query.prototype, 'get', (self, _args, result) => {
    const c = countsOf(field(self, '_firestore'));
    if (c) c.reads += documentsIn(result);
  });
  const probe = new Firestore({ projectId: 'bench-probe' });
  // An aggregation bills one read per 1000 index entries it counts, at least one.
  wrapAsync(Object.getPrototypeOf(probe.collection('x').count()) as object, 'get', (self, _args, result) => {
    const c = countsOf(field(field(self, '_query') as object, '_firestore'));
    const read: unknown = typeof result === 'object' && result !== null ? Reflect.get(result, 'data') : undefined;
    const data: unknown = typeof read === 'function' && result ? Reflect.apply(read, result, []) : undefined;
    const count: unknown = typeof data === 'object' && data !== null ? Reflect.get(data, 'count') : undefined;
    if (c) c.reads += Math.max(1, Math.ceil((typeof count === 'number' ? count : 0) / 1000));
  });
  wrapAsync(Transaction.prototype, 'get', (self, args, result) => {
    const c = countsOf(field(self, '_firestore'));
    if (c) c.reads += args[0] instanceof DocumentReference ? 1 : documentsIn(result);
  });
  wrapAsync(Transaction.prototype, 'getAll', (self, _args, result) => {
    const c = countsOf(field(self, '_firestore'));
    if (c && Array.isArray(result)) c.reads += result.length;
  });
  // Every write path commits through this internal method, transactions included.
  wrapAsync(WriteBatch.prototype, '_commit', (self) => {
    const c = countsOf(field(self, '_firestore'));
    const ops = field(self, '_ops');
    if (!c || !Array.isArray(ops)) return;
    for (const op of ops) {
      const build: unknown = typeof op === 'object' && op !== null ? Reflect.get(op, 'op') : undefined;
      const write: unknown = typeof build === 'function' ? Reflect.apply(build, op, []) : undefined;
      const isDelete = typeof write === 'object' && write !== null && Reflect.get(write, 'delete') !== undefined;
      if (isDelete) c.deletes += 1;
      else c.writes += 1;
    }
  });
}

/** A Firestore client whose billable operations are counted into the returned `counts`. */
export function countedFirestore(projectId: string): { db: Firestore; counts: Counts } {
  patchFirestore();
  const db = new Firestore({ projectId, ignoreUndefinedProperties: true });
  const counts = zeroCounts();
  ledger.set(db, counts);
  return { db, counts };
}

/** Pub/Sub subscriptions per topic (infra/topology.yaml): each delivery is billed again. */
const DELIVERIES: Record<string, number> = {
  'proxy-requests': 2,
  'proxy-checks': 1,
  'relay-commands': 1,
  'relay-reports': 1,
  'health-ticks': 1,
  'gc-ticks': 1,
};

/** Adds one published message of `body` bytes (plus attributes) to `counts`. */
export function countMessage(counts: Counts, topic: string, body: string, attributes: Record<string, string>): void {
  const attributeBytes = Object.entries(attributes).reduce((n, [k, v]) => n + k.length + v.length, 0);
  // Body, attributes, 20 bytes of timestamp, a message id (Pub/Sub pricing page).
  const size = Buffer.byteLength(body) + attributeBytes + 20 + 16;
  counts.messages += 1;
  counts.pubsubBytes += Math.max(1000, size) * (1 + (DELIVERIES[topic] ?? 1));
}

/** Counts one invocation that ran from `startedMs` (performance.now()) until now. */
export function countInvocation(counts: Counts, startedMs: number, nowMs: number): void {
  counts.invocations += 1;
  counts.invocationMs += Math.ceil(Math.max(1, nowMs - startedMs) / 100) * 100;
}
