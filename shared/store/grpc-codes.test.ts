import { describe, expect, it } from 'vitest';
import { abortIfClosed, GRPC_CODES, grpcCode } from './grpc-codes.js';

const refusal = (code: number, message: string) => Object.assign(new Error(message), { code });

describe('abortIfClosed', () => {
  it('throws a read on a closed transaction as ABORTED (which the client retries), keeping the cause', async () => {
    const closed = refusal(GRPC_CODES.INVALID_ARGUMENT, '3 INVALID_ARGUMENT: Transaction is invalid or closed.');
    const err: unknown = await abortIfClosed(Promise.reject(closed)).catch((e: unknown) => e);
    expect(grpcCode(err)).toBe(GRPC_CODES.ABORTED);
    expect((err as Error).message).toContain('Transaction is invalid or closed');
    expect((err as Error).cause).toBe(closed);
  });

  it('passes every other refusal and every answer through unchanged', async () => {
    const invalid = refusal(GRPC_CODES.INVALID_ARGUMENT, '3 INVALID_ARGUMENT: a bad field path');
    await expect(abortIfClosed(Promise.reject(invalid))).rejects.toBe(invalid);
    const unavailable = refusal(GRPC_CODES.UNAVAILABLE, 'Transaction is invalid or closed.');
    await expect(abortIfClosed(Promise.reject(unavailable))).rejects.toBe(unavailable);
    expect(await abortIfClosed(Promise.resolve([1, 2]))).toEqual([1, 2]);
  });
});
