/**
 * Optimistic concurrency for the in-memory stores, shaped like Firestore's for our usage: a read,
 * a pause (other operations run, as they would during a round trip), then a commit that holds only
 * if nothing read was written since; otherwise the work is done again on what is there now.
 */
import { GRPC_CODES } from '../grpc-codes.js';

/** Lets other pending operations run, as a round trip to the database would. */
export const roundTrip = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Firestore's transactions give up after five attempts. */
const TRANSACTION_ATTEMPTS = 5;

/** The error a transaction that lost every attempt fails with (gRPC ABORTED, as Firestore's). */
export class TransactionAborted extends Error {
  readonly code = GRPC_CODES.ABORTED;
  constructor() {
    super(`transaction aborted after ${TRANSACTION_ATTEMPTS} attempts: contention`);
  }
}

/**
 * Runs `attempt` until its reads still hold at commit. `attempt` reads (returning what it read, as
 * identities to compare) and returns a commit function; nothing is written when a read changed.
 *
 * @param reads - the current identities of everything the attempt read (compared with `===`)
 */
export async function transaction<R>(
  attempt: () => { seen: unknown[]; commit: () => R },
  reads: () => unknown[],
  attempts = TRANSACTION_ATTEMPTS,
): Promise<R> {
  for (let i = 0; i < attempts; i++) {
    const { seen, commit } = attempt();
    await roundTrip();
    const now = reads();
    if (seen.every((value, index) => value === now[index])) return commit();
  }
  throw new TransactionAborted();
}
