/** The Firestore client, configured once (the emulator is found through FIRESTORE_EMULATOR_HOST). */
import { FieldValue, Firestore, Timestamp } from '@google-cloud/firestore';
import { updateTimeText } from '../clock.js';

/** Collection names: the public state layout (docs/architecture.md "State in Firestore"). */
export const COLLECTIONS = {
  proxies: 'proxies',
  credentials: 'credentials',
  tombstones: 'tombstones',
  rejections: 'rejections',
  relays: 'relays',
  providers: 'providers',
  pools: 'pools',
  /** One document per API caller (a token digest) and hour: the bans its reports caused (`report-rules.ts#banBudgetId`). */
  banBudgets: 'banBudgets',
  /** One document per `static` provider endpoint: who holds it (`static-claims.ts`). */
  staticClaims: 'staticClaims',
  /** One document per pool and gateway: its latest demand report (`demand-rules.ts#demandId`). */
  poolDemand: 'poolDemand',
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
 * Firestore's REST transport (`preferRest`: no gRPC stack to load on the first call) is off until
 * the guarantee suites pass with it: under a machine load of 15–42 their redelivery and
 * crash-points runs over REST failed on timeouts (docs/performance.md). Its separate HTTP/1.1
 * requests also widen the gap between two reads, which `FirestoreRelayRepository.instanceAndCommand`
 * closes by reading both at one time.
 */
const PREFER_REST = false;

/**
 * The Firestore client of every store. Over REST (when `PREFER_REST`) the transport asks for
 * credentials even for the emulator, which wants none but the owner's.
 *
 * @param env - where `FIRESTORE_EMULATOR_HOST` is read (the client itself reads `process.env`)
 */
export function createFirestore(projectId: string, env: Record<string, string | undefined> = process.env): Firestore {
  const emulator = env['FIRESTORE_EMULATOR_HOST'] ? { authClient: emulatorAuth } : {};
  const rest = PREFER_REST ? { preferRest: true, ...emulator } : {};
  return new Firestore({ projectId, ignoreUndefinedProperties: true, ...rest });
}

/** A Firestore update time as a `readAt` (RFC 3339 with all nine fractional digits: exact, and ordered as text). */
export function readAtOf(updateTime: Timestamp): string {
  return updateTimeText(updateTime.seconds, updateTime.nanoseconds);
}

/** The Firestore update time a `readAt` names (the inverse of `readAtOf`); undefined when it is not one. */
export function updateTimeOf(readAt: string): Timestamp | undefined {
  const match = /^(.+?)(?:\.(\d{1,9}))?Z$/.exec(readAt);
  const ms = match ? Date.parse(`${match[1]}Z`) : NaN;
  if (!match || Number.isNaN(ms) || ms % 1000 !== 0) return undefined;
  return new Timestamp(ms / 1000, Number((match[2] ?? '').padEnd(9, '0')));
}

/**
 * `proxies/{name}.changedAt`: the server time of the document's last write, set by every write of
 * a proxy document (this repository's, the pools' and the reports'), indexed, so that a cached
 * sweep page asks only for what changed since it was read (`FirestoreProxyRepository.changes`).
 */
export const CHANGED_AT = 'changedAt';

/** The `changedAt` stamp every write of a proxy document carries. */
export function changeStamp(): { changedAt: FieldValue } {
  return { changedAt: FieldValue.serverTimestamp() };
}
