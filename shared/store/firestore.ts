/** The Firestore client, configured once (the emulator is found through FIRESTORE_EMULATOR_HOST). */
import { Firestore, type Timestamp } from '@google-cloud/firestore';

/** Collection names: the public state layout (interfaces.md §2, architecture.md §4). */
export const COLLECTIONS = {
  proxies: 'proxies',
  credentials: 'credentials',
  tombstones: 'tombstones',
  rejections: 'rejections',
  relays: 'relays',
  providers: 'providers',
  pools: 'pools',
  /** One document per API caller (a token digest): its report budget for the current minute. */
  reportLimits: 'reportLimits',
} as const;

export function createFirestore(projectId: string): Firestore {
  return new Firestore({ projectId, ignoreUndefinedProperties: true });
}

/** A Firestore update time as a `readAt` (RFC 3339 with all nine fractional digits: exact, and ordered as text). */
export function readAtOf(updateTime: Timestamp): string {
  const seconds = new Date(updateTime.seconds * 1000).toISOString().slice(0, 19);
  return `${seconds}.${String(updateTime.nanoseconds).padStart(9, '0')}Z`;
}
