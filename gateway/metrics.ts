/** Usage per fleet proxy and per session (requests, errors, bytes, latency), as Prometheus text and as a summary. */

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One proxy's or one session's figures. */
export interface Usage {
  requests: number;
  errors: number;
  /** Bytes received from upstream (towards the client). */
  bytesIn: number;
  /** Bytes sent upstream (from the client). */
  bytesOut: number;
  latencySum: number;
  /** Cumulative counts per bucket of {@link BUCKETS}, then +Inf. */
  latencyBuckets: number[];
}

const zero = (): Usage => ({
  requests: 0,
  errors: 0,
  bytesIn: 0,
  bytesOut: 0,
  latencySum: 0,
  latencyBuckets: new Array<number>(BUCKETS.length + 1).fill(0),
});

/** Label values escaped as the text format wants (backslash, quote, newline). */
const label = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

export class GatewayMetrics {
  private readonly proxies = new Map<string, Usage>();
  /** Least recently used first; bounded like the sessions themselves. */
  private readonly sessions = new Map<string, Usage>();
  /** Requests answered by the gateway itself with an error (no proxy, all tries failed, 407). */
  private gatewayErrors = 0;

  constructor(private readonly maxSessions = 10_000) {}

  private of(map: Map<string, Usage>, key: string): Usage {
    let u = map.get(key);
    if (!u) {
      u = zero();
      map.set(key, u);
    }
    return u;
  }

  private session(id: string): Usage {
    const u = this.of(this.sessions, id);
    this.sessions.delete(id);
    this.sessions.set(id, u);
    while (this.sessions.size > this.maxSessions) {
      const oldest = this.sessions.keys().next();
      if (oldest.done) break;
      this.sessions.delete(oldest.value);
    }
    return u;
  }

  /** One request or tunnel through `proxy` that got an answer (latency: to the response head or the tunnel). */
  request(proxy: string, session: string | undefined, latencyMs: number): void {
    const seconds = latencyMs / 1000;
    const i = BUCKETS.findIndex((b) => seconds <= b);
    for (const u of this.targets(proxy, session)) {
      u.requests += 1;
      u.latencySum += seconds;
      for (let j = i < 0 ? BUCKETS.length : i; j <= BUCKETS.length; j++)
        u.latencyBuckets[j] = (u.latencyBuckets[j] ?? 0) + 1;
    }
  }

  /** One failed attempt through `proxy` (refused, timed out, 5xx at the hop, banned). */
  error(proxy: string, session: string | undefined): void {
    for (const u of this.targets(proxy, session)) u.errors += 1;
  }

  bytes(proxy: string, session: string | undefined, bytesIn: number, bytesOut: number): void {
    for (const u of this.targets(proxy, session)) {
      u.bytesIn += bytesIn;
      u.bytesOut += bytesOut;
    }
  }

  gatewayError(): void {
    this.gatewayErrors += 1;
  }

  /** A copy of one proxy's usage (tests, the exit summary). */
  proxy(name: string): Usage {
    return { ...(this.proxies.get(name) ?? zero()) };
  }

  private targets(proxy: string, session: string | undefined): Usage[] {
    return session === undefined
      ? [this.of(this.proxies, proxy)]
      : [this.of(this.proxies, proxy), this.session(session)];
  }

  /** The Prometheus text exposition format (version 0.0.4). */
  render(): string {
    const lines: string[] = [];
    const family = (
      name: string,
      type: string,
      help: string,
      rows: readonly [string, Usage][],
      pick: (u: Usage) => number,
      key: string,
    ) => {
      lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
      for (const [k, u] of rows) lines.push(`${name}{${key}="${label(k)}"} ${pick(u)}`);
    };
    for (const [prefix, key, rows] of [
      ['egress_gateway', 'proxy', [...this.proxies]],
      ['egress_gateway_session', 'session', [...this.sessions]],
    ] as const) {
      const what = key === 'proxy' ? 'per fleet proxy' : 'per session';
      family(
        `${prefix}_requests_total`,
        'counter',
        `Requests and tunnels answered, ${what}.`,
        rows,
        (u) => u.requests,
        key,
      );
      family(
        `${prefix}_errors_total`,
        'counter',
        `Failed attempts (refused, timed out, 407/502/503/504 at the hop, banned), ${what}.`,
        rows,
        (u) => u.errors,
        key,
      );
      family(
        `${prefix}_received_bytes_total`,
        'counter',
        `Bytes received from upstream, ${what}.`,
        rows,
        (u) => u.bytesIn,
        key,
      );
      family(`${prefix}_sent_bytes_total`, 'counter', `Bytes sent upstream, ${what}.`, rows, (u) => u.bytesOut, key);
      const h = `${prefix}_latency_seconds`;
      lines.push(`# HELP ${h} Time to the response head or the established tunnel, ${what}.`, `# TYPE ${h} histogram`);
      for (const [k, u] of rows) {
        const l = `${key}="${label(k)}"`;
        BUCKETS.forEach((b, i) => lines.push(`${h}_bucket{${l},le="${b}"} ${u.latencyBuckets[i] ?? 0}`));
        lines.push(`${h}_bucket{${l},le="+Inf"} ${u.latencyBuckets[BUCKETS.length] ?? 0}`);
        lines.push(`${h}_sum{${l}} ${u.latencySum}`, `${h}_count{${l}} ${u.requests}`);
      }
    }
    lines.push(
      '# HELP egress_gateway_failed_requests_total Requests the gateway answered itself with an error (407, 502).',
      '# TYPE egress_gateway_failed_requests_total counter',
      `egress_gateway_failed_requests_total ${this.gatewayErrors}`,
    );
    return `${lines.join('\n')}\n`;
  }

  /** One line per proxy, for the exit summary. */
  summary(): string[] {
    return [...this.proxies].map(
      ([name, u]) =>
        `${name}: ${u.requests} requests, ${u.errors} errors, ${u.bytesIn} bytes in, ${u.bytesOut} bytes out, mean ${u.requests ? ((u.latencySum / u.requests) * 1000).toFixed(1) : '0'} ms`,
    );
  }
}
