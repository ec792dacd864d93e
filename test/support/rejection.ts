/** Awaits a promise that must reject and returns what it rejected with, for assertions on typed errors. */

/**
 * @returns the rejection reason of `promise`
 * @throws when `promise` resolves instead
 */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection, but the promise resolved');
}

/**
 * @returns the rejection reason of `promise`, which must be an instance of `type`
 * @throws when `promise` resolves, or rejects with anything else
 */
export async function rejectionOf<T>(
  promise: Promise<unknown>,
  type: abstract new (...args: never[]) => T,
): Promise<T> {
  const error = await rejection(promise);
  if (error instanceof type) return error;
  throw error;
}
