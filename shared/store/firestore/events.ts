/** Audit trails (`proxies/{name}/events`, `pools/{name}/events`): append with retention, read newest first. */
import type { CollectionReference, Firestore, Query } from '@google-cloud/firestore';
import { EVENT_RETENTION_MS, type ProxyEvent } from '../records.js';

/** Appends an event and keeps only the newest `keep`. */
export async function appendEvent(
  db: Firestore,
  events: CollectionReference,
  event: ProxyEvent,
  keep: number,
): Promise<void> {
  await events.add({ ...event, expireAt: new Date(Date.parse(event.at) + EVENT_RETENTION_MS) });
  await trimEvents(db, events, keep);
}

/** The events past the newest `keep`, by `at` (see `trimEvents`). */
export function trimQuery(events: CollectionReference, keep: number): Query {
  return events.orderBy('at', 'desc').offset(keep).select('at');
}

/**
 * Keeps only the newest `keep` events. Its query selects `at`, not nothing: when its stream breaks
 * the client resumes it after the last document received (`startAfter` that snapshot), which needs
 * the `orderBy` field in it — with `select()` the resume threw "Field "at" is missing" instead.
 */
export async function trimEvents(db: Firestore, events: CollectionReference, keep: number): Promise<void> {
  const old = await trimQuery(events, keep).get();
  if (!old.empty) {
    const batch = db.batch();
    for (const d of old.docs) batch.delete(d.ref);
    await batch.commit();
  }
}

/** The newest `limit` events, newest first. */
export async function readEvents(events: CollectionReference, limit: number): Promise<ProxyEvent[]> {
  const snap = await events.orderBy('at', 'desc').limit(limit).get();
  return snap.docs.map((d) => ({
    at: String(d.get('at')),
    type: d.get('type') === 'Warning' ? 'Warning' : 'Normal',
    reason: String(d.get('reason')),
    message: String(d.get('message')),
  }));
}
