/** Runs async work one at a time per key, in submission order; different keys run concurrently. */

/**
 * A per-key FIFO: `run(key, fn)` starts `fn` only after every earlier `run` with the same key has
 * settled (fulfilled or rejected). Keys with no pending work are forgotten, so it does not grow.
 *
 * @example
 * const serial = new KeyedSerializer();
 * await Promise.all([serial.run('a', first), serial.run('a', second)]); // second starts after first
 */
export class KeyedSerializer {
  private readonly tails = new Map<string, Promise<void>>();

  /**
   * @param key - work with the same key never overlaps
   * @param fn - the work; its result or rejection is passed through
   * @returns what `fn` returns
   */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const result = previous.then(fn);
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }

  /** Resolves once all work submitted so far has settled. */
  async idle(): Promise<void> {
    while (this.tails.size > 0) await Promise.all([...this.tails.values()]);
  }
}
