/** What the bench started, stopped newest first, once: when the run ends, fails or is interrupted. */
export class Cleanup {
  private readonly stops: (() => Promise<unknown>)[] = [];
  private running: Promise<void> | undefined;

  /**
   * Registers `stop`.
   *
   * @returns a function that runs `stop` now and unregisters it (for what ends before the run does)
   */
  add(stop: () => Promise<unknown>): () => Promise<void> {
    this.stops.push(stop);
    return async () => {
      const at = this.stops.indexOf(stop);
      if (at < 0) return;
      this.stops.splice(at, 1);
      await stop();
    };
  }

  /** Runs every registered stop, newest first; one that fails does not keep the others from running. */
  run(): Promise<void> {
    this.running ??= (async () => {
      for (let stop = this.stops.pop(); stop; stop = this.stops.pop()) await stop().catch(() => undefined);
      this.running = undefined;
    })();
    return this.running;
  }
}
