/**
 * The gateway's usage as OpenTelemetry instruments — per fleet proxy, per target domain (bounded),
 * and session traffic summed per pool — read by a Prometheus exporter the gateway serves.
 */
import type { Attributes, Histogram, ObservableCounter } from '@opentelemetry/api';
import { PrometheusExporter, PrometheusSerializer } from '@opentelemetry/exporter-prometheus';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { DataPointType, MeterProvider, type ResourceMetrics } from '@opentelemetry/sdk-metrics';

/** Every instrument's name, in one place (docs/gateway.md, "Usage and metrics", lists them). */
export const GATEWAY_METRIC_NAMES = {
  proxyAttempts: 'egress.gateway.proxy.attempts',
  proxyDuration: 'egress.gateway.proxy.duration',
  proxyIo: 'egress.gateway.proxy.io',
  domainAttempts: 'egress.gateway.domain.attempts',
  domainDuration: 'egress.gateway.domain.duration',
  domainIo: 'egress.gateway.domain.io',
  sessionAttempts: 'egress.gateway.session.attempts',
  sessionIo: 'egress.gateway.session.io',
  failures: 'egress.gateway.failures',
} as const;

/** Seconds to the response head or the established tunnel. */
const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The domain label of every domain past the cap: not a host name, so it names no real domain. */
export const OTHER_DOMAINS = '(other)';
/** The pool label of session traffic through a router that asked for no pool. */
export const ANY_POOL = '*';
/** Distinct domains with a series of their own, by default; later ones count under {@link OTHER_DOMAINS}. */
export const DEFAULT_MAX_DOMAINS = 100;

/** What one attempt through a fleet proxy came to: answered (a response head or a tunnel), banned by the target, or failed. */
export type Outcome = 'ok' | 'banned' | 'failed';

/** Whose traffic a figure is: the fleet proxy, the target host, and the client's session (summed per pool, never labelled). */
export interface Use {
  proxy: string;
  domain: string;
  session: string | undefined;
}

/** One proxy's totals, for the exit summary and tests. */
export interface ProxyTotals {
  ok: number;
  banned: number;
  failed: number;
  received: number;
  sent: number;
  /** Mean seconds of the answered attempts. */
  meanSeconds: number;
}

/** Series of one counter with attributes of their own: one less than the SDK's default cardinality limit, for the overflow series. */
export const MAX_SERIES = 1999;
/** The key of the overflow series: no key of a real series is (theirs all hold a space, or are empty). */
const OVERFLOW_KEY = '(overflow)';

/**
 * A counter's running totals per attribute set, kept by the gateway and read by an observable
 * counter when the metrics are collected. A request adds to five or six counters; with synchronous
 * OTel counters each add hashed its attributes (sorted keys, JSON) and went through the SDK's
 * storage, about a tenth of the gateway's CPU under load (a `--cpu-prof` of the peers bench's
 * load). Here an add is one Map lookup on a key the caller joins from the label values.
 */
class Totals {
  private readonly byKey = new Map<string, { attributes: Attributes; value: number }>();

  /**
   * Adds `n` to the series `key` (one key per attribute set), whose attributes `attributes()` builds
   * once. Past {@link MAX_SERIES} series, later attribute sets add to one series marked
   * `otel.metric.overflow`, as the SDK's synchronous counters do past their cardinality limit
   * (2,000); kept under that limit, so the SDK never overflows these itself (its overflow of an
   * observable counter compares each new total with the previous one and under-counts).
   */
  add(key: string, n: number, attributes: () => Attributes): void {
    const series = this.byKey.get(key);
    if (series) series.value += n;
    else if (this.byKey.size < MAX_SERIES) this.byKey.set(key, { attributes: attributes(), value: n });
    else {
      const overflow = this.byKey.get(OVERFLOW_KEY);
      if (overflow) overflow.value += n;
      else this.byKey.set(OVERFLOW_KEY, { attributes: { 'otel.metric.overflow': true }, value: n });
    }
  }

  /** Reports every series to `counter` at each collection. */
  observeBy(counter: ObservableCounter): void {
    counter.addCallback((result) => {
      for (const { attributes, value } of this.byKey.values()) result.observe(value, attributes);
    });
  }
}

interface Instruments {
  proxyAttempts: Totals;
  proxyDuration: Histogram;
  proxyIo: Totals;
  domainAttempts: Totals;
  domainDuration: Histogram;
  domainIo: Totals;
  sessionAttempts: Totals;
  sessionIo: Totals;
  failures: Totals;
}

/** The counters of one gateway process, shared by all its routers; each router records through {@link recorder}. */
export class GatewayMetrics {
  /** A reader only: the gateway serves the text itself, on its own listener. */
  private readonly exporter = new PrometheusExporter({ preventServerStart: true });
  private readonly serializer = new PrometheusSerializer('', false, undefined, false, true);
  private readonly provider: MeterProvider;
  private readonly instruments: Instruments;
  private readonly domains = new Set<string>();

  /**
   * @param maxDomains - distinct target domains that get their own series (the first seen); the
   *   rest are summed under `(other)`, so a crawl over millions of hosts stays a bounded scrape
   */
  constructor(private readonly maxDomains = DEFAULT_MAX_DOMAINS) {
    // Its own provider, not the process-wide one: the gateway runs beside its client, and this
    // pull endpoint is its only reader.
    this.provider = new MeterProvider({
      resource: resourceFromAttributes({ 'service.name': 'egress-gateway', 'service.namespace': 'egress' }),
      readers: [this.exporter],
    });
    const meter = this.provider.getMeter('egress-gateway');
    const n = GATEWAY_METRIC_NAMES;
    const duration = (name: string, of: string) =>
      meter.createHistogram(name, {
        description: `Time to the response head or the established tunnel, ${of}`,
        unit: 's',
        advice: { explicitBucketBoundaries: BUCKETS },
      });
    /** Totals reported by an observable counter of `name`. */
    const totals = (name: string, description: string, unit: string) => {
      const t = new Totals();
      t.observeBy(meter.createObservableCounter(name, { description, unit }));
      return t;
    };
    const attempts = (name: string, of: string) =>
      totals(name, `Attempts through a fleet proxy by outcome (ok, banned, failed), ${of}`, '{attempt}');
    const io = (name: string, of: string) =>
      totals(name, `Bytes received from (receive) and sent (transmit) upstream, ${of}`, 'By');
    this.instruments = {
      proxyAttempts: attempts(n.proxyAttempts, 'per fleet proxy'),
      proxyDuration: duration(n.proxyDuration, 'per fleet proxy'),
      proxyIo: io(n.proxyIo, 'per fleet proxy'),
      domainAttempts: attempts(n.domainAttempts, 'per target domain'),
      domainDuration: duration(n.domainDuration, 'per target domain'),
      domainIo: io(n.domainIo, 'per target domain'),
      sessionAttempts: attempts(n.sessionAttempts, 'of clients in a session, summed per pool'),
      sessionIo: io(n.sessionIo, 'of clients in a session, summed per pool'),
      failures: totals(
        n.failures,
        'Requests and tunnels the gateway refused or answered itself with an error',
        '{request}',
      ),
    };
  }

  /**
   * The recorder of one router.
   *
   * @param pool - the pool the router serves (`--pool` or the username's `pool-`); session
   *   traffic is summed under it, or under `*` when none was asked for
   * @param onBytes - also told the bytes of each answered request or closed tunnel (the pool's usage report)
   */
  recorder(pool: string | undefined, onBytes?: (received: number, sent: number) => void): UsageRecorder {
    return new UsageRecorder(this, this.instruments, pool ?? ANY_POOL, onBytes);
  }

  /** The domain's label: itself while fewer than the cap are known, else `(other)`. */
  domainLabel(domain: string): string {
    if (this.domains.has(domain)) return domain;
    if (this.domains.size >= this.maxDomains) return OTHER_DOMAINS;
    this.domains.add(domain);
    return domain;
  }

  /** Everything recorded so far in the Prometheus text exposition format (0.0.4). */
  async text(): Promise<string> {
    return this.serializer.serialize(await this.collect());
  }

  /** Everything recorded so far, as the SDK holds it. */
  async collect(): Promise<ResourceMetrics> {
    return (await this.exporter.collect()).resourceMetrics;
  }

  /** Totals per fleet proxy, read back from the instruments. */
  async totals(): Promise<Map<string, ProxyTotals>> {
    const totals = new Map<string, ProxyTotals>();
    const of = (attributes: Attributes) => {
      const name = String(attributes['proxy.name']);
      let t = totals.get(name);
      if (!t) totals.set(name, (t = { ok: 0, banned: 0, failed: 0, received: 0, sent: 0, meanSeconds: 0 }));
      return t;
    };
    const n = GATEWAY_METRIC_NAMES;
    for (const scope of (await this.collect()).scopeMetrics)
      for (const metric of scope.metrics) {
        const name = metric.descriptor.name;
        if (metric.dataPointType === DataPointType.HISTOGRAM && name === n.proxyDuration)
          for (const p of metric.dataPoints)
            of(p.attributes).meanSeconds = p.value.count ? (p.value.sum ?? 0) / p.value.count : 0;
        if (metric.dataPointType !== DataPointType.SUM) continue;
        for (const p of metric.dataPoints) {
          if (name === n.proxyAttempts) {
            const outcome = String(p.attributes['gateway.outcome']);
            if (outcome === 'ok' || outcome === 'banned' || outcome === 'failed') of(p.attributes)[outcome] += p.value;
          }
          if (name === n.proxyIo)
            of(p.attributes)[p.attributes['network.io.direction'] === 'receive' ? 'received' : 'sent'] += p.value;
        }
      }
    return totals;
  }

  /** One line per proxy, for the exit summary. */
  async summary(): Promise<string[]> {
    return [...(await this.totals())].map(
      ([name, t]) =>
        `${name}: ${t.ok} answered, ${t.banned} banned, ${t.failed} failed, ${t.received} bytes in, ${t.sent} bytes out, mean ${(t.meanSeconds * 1000).toFixed(1)} ms`,
    );
  }
}

/** Records one router's traffic: every figure per proxy and per domain, and, for a session's traffic, per pool. */
export class UsageRecorder {
  constructor(
    /** The gateway's metrics this recorder adds to. */
    readonly all: GatewayMetrics,
    private readonly instruments: Instruments,
    private readonly pool: string,
    private readonly onBytes?: (received: number, sent: number) => void,
  ) {}

  /** One attempt through `use.proxy`; `seconds` (to the answer) is recorded for answered attempts. */
  attempt(use: Use, outcome: Outcome, seconds: number): void {
    const i = this.instruments;
    const domain = this.all.domainLabel(use.domain);
    i.proxyAttempts.add(`${outcome} ${use.proxy}`, 1, () => ({ 'proxy.name': use.proxy, 'gateway.outcome': outcome }));
    i.domainAttempts.add(`${outcome} ${domain}`, 1, () => ({ 'target.domain': domain, 'gateway.outcome': outcome }));
    if (use.session !== undefined)
      i.sessionAttempts.add(`${outcome} ${this.pool}`, 1, () => ({
        'pool.name': this.pool,
        'gateway.outcome': outcome,
      }));
    if (outcome !== 'ok') return;
    i.proxyDuration.record(seconds, { 'proxy.name': use.proxy });
    i.domainDuration.record(seconds, { 'target.domain': domain });
  }

  /** The bytes of one answered request or closed tunnel. */
  bytes(use: Use, received: number, sent: number): void {
    const i = this.instruments;
    const both = (totals: Totals, key: string, attributes: Attributes) => {
      totals.add(`receive ${key}`, received, () => ({ ...attributes, 'network.io.direction': 'receive' }));
      totals.add(`transmit ${key}`, sent, () => ({ ...attributes, 'network.io.direction': 'transmit' }));
    };
    both(i.proxyIo, use.proxy, { 'proxy.name': use.proxy });
    const domain = this.all.domainLabel(use.domain);
    both(i.domainIo, domain, { 'target.domain': domain });
    if (use.session !== undefined) both(i.sessionIo, this.pool, { 'pool.name': this.pool });
    this.onBytes?.(received, sent);
  }

  /** A request or tunnel the gateway refused or answered itself with an error (400, 407, 413, 502, 505, a SOCKS5 refusal). */
  failure(): void {
    this.instruments.failures.add('', 1, () => ({}));
  }
}
