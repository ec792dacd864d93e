/** A read-decide-write loop on one document, preconditioned on its update time instead of a transaction. */
import type { DocumentReference, Firestore, Precondition, Timestamp, WriteBatch } from '@google-cloud/firestore';
import type { ProxyDoc } from '../../domain/status.js';
import { grpcCode, GRPC_CODES } from '../grpc-codes.js';

/** The writes a decision queues on a batch, each guarded by `unchanged`; undefined means no write. */
export type QueuedWrite = (batch: WriteBatch, unchanged: Precondition) => void;

/**
 * Reads a proxy and commits the writes `change(doc)` queues only if the document did not change
 * in between (preconditioned on its update time; redone on a fresh read when it did); `change`
 * returning undefined means no write. No transaction, for the reason `FirestoreRelayRepository.applyReport`
 * has none: a transaction locks what it reads, and concurrent checks on one proxy would queue on
 * that lock.
 *
 * @param parse - the document's data as a proxy, undefined when corrupt
 * @param first - a copy already read, tried before any read (its write fails its precondition
 *   when the document changed since, and is decided again on a fresh read); a copy that asks
 *   for no write is read again, since a stale copy may say no where the current one says yes
 * @returns whether the writes happened (false after `attempts` lost races)
 */
export async function writeIfUnchanged(
  db: Firestore,
  ref: DocumentReference,
  parse: (data: unknown) => ProxyDoc | undefined,
  change: (doc: ProxyDoc | undefined, updateTime: Timestamp | undefined) => QueuedWrite | undefined,
  attempts = 10,
  first?: { doc: ProxyDoc; updateTime: Timestamp },
): Promise<boolean> {
  let known = first;
  for (let attempt = 0; attempt < attempts; attempt++) {
    const tried = known;
    known = undefined;
    const snap = tried ? undefined : await ref.get();
    const doc = tried ? structuredClone(tried.doc) : snap?.exists ? parse(snap.data()) : undefined;
    const updateTime = tried ? tried.updateTime : snap?.updateTime;
    const write = change(doc, updateTime);
    if (tried && !write) continue;
    if (!write || !updateTime) return false;
    const batch = db.batch();
    write(batch, { lastUpdateTime: updateTime });
    try {
      await batch.commit();
      return true;
    } catch (err) {
      // Written since it was read: decide again on what it is now.
      if (grpcCode(err) !== GRPC_CODES.FAILED_PRECONDITION) throw err;
    }
  }
  return false;
}
