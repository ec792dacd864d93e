/** The Firestore client, configured once (the emulator is found through FIRESTORE_EMULATOR_HOST). */
import { Firestore } from '@google-cloud/firestore';

/** Collection names: the public state layout (interfaces.md §2, architecture.md §4). */
export const COLLECTIONS = {
  proxies: 'proxies',
  credentials: 'credentials',
  tombstones: 'tombstones',
  rejections: 'rejections',
  relays: 'relays',
  providers: 'providers',
  /** One document per API caller (a token digest): its report budget for the current minute. */
  reportLimits: 'reportLimits',
} as const;

export function createFirestore(projectId: string): Firestore {
  return new Firestore({ projectId, ignoreUndefinedProperties: true });
}
