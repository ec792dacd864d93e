/** The Firestore side of the warm sweep's delta read (`ProxyRepository.changes`): one query and one count. */
import { FieldPath, type Firestore, type Query, type QueryDocumentSnapshot, Timestamp } from '@google-cloud/firestore';
import { CHANGED_AT, COLLECTIONS } from './client.js';

/**
 * How far before `since` a changes query looks: the emulator stamps a server timestamp a few
 * milliseconds before the commit's update time (6 ms measured), so a write committed just after a
 * read can carry a `changedAt` just before it. Re-reading a document changed in this margin costs
 * one read; missing one would leave a cached page stale.
 */
const CHANGE_SLACK_MS = 2000;

/**
 * The proxies in the name range (`after`, `through`] written since `since` (the indexed
 * `changedAt`: its automatic single-field index, which ends with the document name, serves both
 * ranges, so no composite index is declared), and how many the range holds (an
 * aggregation: one read per 1000).
 */
export async function changedInRange(
  db: Firestore,
  after: string | null,
  through: string | null,
  since: number,
): Promise<{ docs: QueryDocumentSnapshot[]; count: number; readTime: number }> {
  // No orderBy: the range filter on `changedAt` orders by it before the name (the key must come last).
  let range: Query = db.collection(COLLECTIONS.proxies);
  if (after) range = range.where(FieldPath.documentId(), '>', after);
  if (through) range = range.where(FieldPath.documentId(), '<=', through);
  const changedSince = Timestamp.fromMillis(Math.max(0, since - CHANGE_SLACK_MS));
  const [snap, count] = await Promise.all([range.where(CHANGED_AT, '>=', changedSince).get(), range.count().get()]);
  return {
    docs: snap.docs,
    count: count.data().count,
    readTime: Math.min(snap.readTime.toMillis(), count.readTime.toMillis()),
  };
}
