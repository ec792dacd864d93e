/** The gRPC status codes the store and the API act on (Firestore and Pub/Sub errors carry them as `code`). */
export const GRPC_CODES = {
  /** Also a read on a transaction the backend has already closed (`abortIfClosed`). */
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  /** A create found the document already there. */
  ALREADY_EXISTS: 6,
  /** A precondition (an update time read) no longer holds: written since it was read. */
  FAILED_PRECONDITION: 9,
  /** A transaction lost its retries to concurrent ones. */
  ABORTED: 10,
  UNAVAILABLE: 14,
} as const;

/** The gRPC status code an error carries, if any. */
export function grpcCode(err: unknown): unknown {
  return typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
}

/**
 * A transaction's reads made together (`Promise.all`), with a read refused because the attempt's
 * transaction is already closed thrown as ABORTED. The emulator closes a transaction that lost a
 * lock while its other reads are still in flight; the first refusal to arrive, INVALID_ARGUMENT
 * "Transaction is invalid or closed", is not one the client retries, so the function answered 500
 * (once in 146 pushes of the orchestration bench's pool roll, a pool reconcile racing another).
 * As ABORTED the client runs the attempt again, as it does when the lost lock is reported first.
 */
export async function abortIfClosed<T>(reads: Promise<T>): Promise<T> {
  try {
    return await reads;
  } catch (err) {
    const closed =
      grpcCode(err) === GRPC_CODES.INVALID_ARGUMENT &&
      err instanceof Error &&
      /transaction is invalid or closed/i.test(err.message);
    if (!closed) throw err;
    throw Object.assign(new Error(`transaction attempt closed under it: ${err.message}`, { cause: err }), {
      code: GRPC_CODES.ABORTED,
    });
  }
}
