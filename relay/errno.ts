/** Node system errors by code, for the relay's file handling (state, ledger, backend records). */

/** True when `err` is a Node system error with this `code`. */
export function isErrno(err: unknown, code: string): boolean {
  return err instanceof Error && 'code' in err && err.code === code;
}
