/** Counters each guarantee suite keeps, printed as one summary line and appended to test-results/guarantees.jsonl. */
import { appendFileSync, mkdirSync } from 'node:fs';

/** Named counts of one suite (scenarios run, deliveries duplicated, crash points injected, …). */
export class Figures {
  private readonly counts = new Map<string, number>();
  private started = Date.now();

  /** @param provider - the provider type the suite ran against */
  constructor(
    readonly suite: string,
    readonly seed: number,
    readonly provider = 'process',
  ) {}

  /** Starts the clock of `elapsedMs` (the world is up: what follows is the suite's own time). */
  begin(): void {
    this.started = Date.now();
  }

  add(key: string, n = 1): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + n);
  }

  /** Keeps the largest value seen under `key`. */
  max(key: string, value: number): void {
    this.counts.set(key, Math.max(this.counts.get(key) ?? 0, value));
  }

  get(key: string): number {
    return this.counts.get(key) ?? 0;
  }

  /** Makes sure a key shows in the summary even when nothing was counted (the zeros that matter). */
  zero(...keys: string[]): void {
    for (const key of keys) if (!this.counts.has(key)) this.counts.set(key, 0);
  }

  /** Prints `guarantee-figures <suite> provider=… seed=… key=value …` and records it as a JSON line. */
  report(): string {
    this.counts.set('elapsedMs', Date.now() - this.started);
    const entries = [...this.counts].sort(([a], [b]) => a.localeCompare(b));
    const head = `guarantee-figures ${this.suite} provider=${this.provider} seed=${this.seed}`;
    const line = `${head} ${entries.map(([k, v]) => `${k}=${v}`).join(' ')}`;
    console.log(line);
    mkdirSync('test-results', { recursive: true });
    const at = new Date().toISOString();
    const record = { suite: this.suite, provider: this.provider, seed: this.seed, at, ...Object.fromEntries(entries) };
    appendFileSync('test-results/guarantees.jsonl', `${JSON.stringify(record)}\n`);
    return line;
  }
}
