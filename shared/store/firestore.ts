/** The Firestore client, configured once (the emulator is found through FIRESTORE_EMULATOR_HOST). */
import { Firestore, type Timestamp } from '@google-cloud/firestore';
import { updateTimeText } from './clock.js';

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

/** What the REST transport asks of an auth client, answered for the emulator: the owner, plain fetch. */
const emulatorAuth = {
  getRequestHeaders: () => Promise.resolve(new Headers({ authorization: 'Bearer owner' })),
  fetch: (url: string, init: RequestInit) => {
    const headers = new Headers(init.headers);
    headers.set('authorization', 'Bearer owner');
    return fetch(url, { ...init, headers });
  },
};

/**
 * The Firestore client of every store, over REST (HTTP/1.1, `preferRest`) where a call allows it:
 * its REST fallback loads on the first call, not the gRPC stack (listeners would still use gRPC;
 * the stores use none). The REST transport asks for credentials even for the emulator, which
 * wants none but the owner's.
 *
 * REST was once switched off: the redelivery guarantee suite leaked an instance with it. The cause
 * was ours, not REST's — two separate reads that a report could land between
 * (`RelayStore.instanceAndCommand` says how); REST's separate requests only widened the gap.
 *
 * @param env - where `FIRESTORE_EMULATOR_HOST` is read (the client itself reads `process.env`)
 */
export function createFirestore(projectId: string, env: Record<string, string | undefined> = process.env): Firestore {
  const emulator = env['FIRESTORE_EMULATOR_HOST'] ? { authClient: emulatorAuth } : {};
  return new Firestore({ projectId, ignoreUndefinedProperties: true, preferRest: true, ...emulator });
}

/** A Firestore update time as a `readAt` (RFC 3339 with all nine fractional digits: exact, and ordered as text). */
export function readAtOf(updateTime: Timestamp): string {
  return updateTimeText(updateTime.seconds, updateTime.nanoseconds);
}
