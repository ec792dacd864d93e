/** The gRPC status codes the store and the API act on (Firestore and Pub/Sub errors carry them as `code`). */
export const GRPC_CODES = {
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
