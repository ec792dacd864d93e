/** The store's ports: what the functions need from state, implemented on Firestore and in memory. */
import type { ProxyDoc } from '../domain/status.js';

/**
 * A proxy document as read, with the update time it had then (`readAt`, an RFC 3339 timestamp with
 * nanoseconds): the basis of a decision. A fenced write given `readAt` is refused when the document
 * was written since, whatever copy of the document the caller holds.
 */
export interface StoredProxy {
  doc: ProxyDoc;
  readAt: string;
}
