/**
 * Per-domain success routing: what the gateway saw of each (fleet proxy, target domain) pair, as
 * decayed success and failure counts, and a Thompson-sampling choice over them. Pure state with an
 * injected clock and random source; no I/O.
 *
 * Why Thompson sampling over Beta(1 + successes, 1 + failures): it needs no exploration rate to
 * tune. A pair seen rarely has a wide posterior and still gets tried now and then; a pair that
 * keeps failing has a narrow one near 0 and is almost never drawn; and because the counts decay
 * (half-life below), an old verdict widens again with time, so a proxy that recovered is tried
 * again and comes back on its own successes. A decayed ratio with ε-exploration would spend a
 * fixed ε of all traffic on proxies known to be bad, however much evidence there is.
 */

/** Tuning of the learning; defaults in `DEFAULT_LEARNING`. */
export interface LearningOptions {
  /** Counts halve every this long (default 10 min: a banned pair is tried again within the hour). */
  halfLifeMs: number;
  /** At most this many domains are remembered; the least recently used goes first (default 1,000). */
  maxDomains: number;
  /** A pair cools down (left out for the domain, reported) once its decayed failures reach this (default 3)… */
  coolAfterFailures: number;
  /** …while its decayed success ratio is below this (default 0.2). */
  coolBelowRatio: number;
  /**
   * A candidate whose draw is within this of the best draw counts as good as the best; the first
   * such in the caller's (rotation) order is chosen (default 0.05). Among proxies that all do well
   * this keeps the rotation, and its even spread of load and kept-alive connections: a pure argmax
   * of random draws spread requests at random and cost the plain path 13 % in the bench's A/B.
   */
  tolerance: number;
}

export const DEFAULT_LEARNING: LearningOptions = {
  halfLifeMs: 600_000,
  maxDomains: 1000,
  coolAfterFailures: 3,
  coolBelowRatio: 0.2,
  tolerance: 0.05,
};

/** Decayed counts of one pair, as of `at`. */
interface Counts {
  successes: number;
  failures: number;
  at: number;
}

/** A standard normal draw (Box–Muller). */
function normal(random: () => number): number {
  const u = 1 - random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** A Gamma(shape, 1) draw for shape ≥ 1 (Marsaglia and Tsang, ACM TOMS 26(3), 2000). */
function gamma(shape: number, random: () => number): number {
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = normal(random);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = random();
    if (u < 1 - 0.0331 * x ** 4 || Math.log(u) < 0.5 * x * x + d * (1 - v + Math.log(v))) return d * v;
  }
}

/** A Beta(a, b) draw for a, b ≥ 1. */
export function betaSample(a: number, b: number, random: () => number): number {
  const x = gamma(a, random);
  return x / (x + gamma(b, random));
}

export class Learning {
  /** Domain → proxy → counts; Map order is least recently used domain first. */
  private readonly domains = new Map<string, Map<string, Counts>>();

  constructor(
    private readonly options: LearningOptions,
    private readonly now: () => number,
    private readonly random: () => number = Math.random,
  ) {}

  /**
   * Counts one outcome of `proxy` for `domain`.
   *
   * @returns true when this failure makes the pair cool down (leave it out for the domain, report it)
   */
  record(proxy: string, domain: string, ok: boolean): boolean {
    const counts = this.decayed(proxy, domain, true);
    if (ok) counts.successes += 1;
    else counts.failures += 1;
    const ratio = counts.successes / (counts.successes + counts.failures);
    // Counts decay between failures milliseconds apart (2.99999 after three): within 1 % of the
    // threshold counts as reaching it, or a burst of failures would never cool down.
    return !ok && counts.failures >= this.options.coolAfterFailures * 0.99 && ratio < this.options.coolBelowRatio;
  }

  /**
   * Draws one of `candidates` for `domain`: each gets a sample of its pair's Beta posterior; the
   * first (in the order given) whose sample is within `tolerance` of the highest wins.
   *
   * @param candidates - in rotation order
   * @returns undefined only when `candidates` is empty
   */
  choose<T extends { name: string }>(candidates: readonly T[], domain: string): T | undefined {
    const draws = candidates.map((c) => {
      const counts = this.decayed(c.name, domain, false);
      return betaSample(1 + (counts?.successes ?? 0), 1 + (counts?.failures ?? 0), this.random);
    });
    const best = Math.max(...draws);
    return candidates.find((_, i) => (draws[i] ?? -1) >= best - this.options.tolerance);
  }

  /** The decayed success ratio of a pair, or undefined when nothing was seen (for reports and tests). */
  score(proxy: string, domain: string): { successes: number; failures: number } | undefined {
    const counts = this.decayed(proxy, domain, false);
    return counts && { successes: counts.successes, failures: counts.failures };
  }

  /** Forgets what was seen of `proxy` (it was replaced by another instance under its name). */
  forget(proxy: string): void {
    for (const proxies of this.domains.values()) proxies.delete(proxy);
  }

  domainCount(): number {
    return this.domains.size;
  }

  /** The pair's counts decayed to now; created (and the domain marked recently used) when `create`. */
  private decayed(proxy: string, domain: string, create: true): Counts;
  private decayed(proxy: string, domain: string, create: false): Counts | undefined;
  private decayed(proxy: string, domain: string, create: boolean): Counts | undefined {
    let proxies = this.domains.get(domain);
    if (create) {
      proxies ??= new Map();
      this.domains.delete(domain);
      this.domains.set(domain, proxies);
      while (this.domains.size > this.options.maxDomains) {
        const oldest = this.domains.keys().next();
        if (oldest.done) break;
        this.domains.delete(oldest.value);
      }
    }
    let counts = proxies?.get(proxy);
    const now = this.now();
    if (!counts) {
      if (!create || !proxies) return undefined;
      counts = { successes: 0, failures: 0, at: now };
      proxies.set(proxy, counts);
    }
    if (now > counts.at) {
      const factor = 2 ** (-(now - counts.at) / this.options.halfLifeMs);
      counts.successes *= factor;
      counts.failures *= factor;
      counts.at = now;
    }
    return counts;
  }
}
