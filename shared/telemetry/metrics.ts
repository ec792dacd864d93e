/** The product's metrics (names in docs/observability.md): recorded through the OpenTelemetry API, no-ops until set up. */
import {
  metrics,
  type Attributes,
  type Counter,
  type Gauge,
  type Histogram,
  type MeterProvider,
} from '@opentelemetry/api';

/** Every metric name, in one place (docs/observability.md lists them with their attributes). */
export const METRIC_NAMES = {
  providerOperations: 'egress.provider.operations',
  providerOperationDuration: 'egress.provider.operation.duration',
  proxies: 'egress.proxies',
  probeDuration: 'egress.probe.duration',
  gcDeletions: 'egress.gc.deletions',
  relayHeartbeatAge: 'egress.relay.heartbeat.age',
} as const;

interface Instruments {
  operations: Counter;
  operationDuration: Histogram;
  proxies: Gauge;
  probeDuration: Histogram;
  gcDeletions: Counter;
  heartbeatAge: Gauge;
}

// Instruments made from the no-op provider stay no-ops, so they are made per provider, on first use.
const made = new WeakMap<MeterProvider, Instruments>();

function instruments(): Instruments {
  const provider = metrics.getMeterProvider();
  let found = made.get(provider);
  if (!found) {
    const meter = provider.getMeter('egress');
    found = {
      operations: meter.createCounter(METRIC_NAMES.providerOperations, {
        description: 'Provider operations, by provider, operation and outcome',
        unit: '{operation}',
      }),
      operationDuration: meter.createHistogram(METRIC_NAMES.providerOperationDuration, {
        description: 'Duration of provider operations',
        unit: 'ms',
      }),
      proxies: meter.createGauge(METRIC_NAMES.proxies, { description: 'Proxies by phase', unit: '{proxy}' }),
      probeDuration: meter.createHistogram(METRIC_NAMES.probeDuration, {
        description: 'Latency of probes through a proxy to the echo endpoint',
        unit: 'ms',
      }),
      gcDeletions: meter.createCounter(METRIC_NAMES.gcDeletions, {
        description: 'Orphaned instances garbage-collected, by provider and outcome',
        unit: '{instance}',
      }),
      heartbeatAge: meter.createGauge(METRIC_NAMES.relayHeartbeatAge, {
        description: "Age of a relay's last report when a provider checked it",
        unit: 's',
      }),
    };
    made.set(provider, found);
  }
  return found;
}

/** One provider operation: `outcome` is `ok` or the error code. */
export function recordProviderOperation(
  op: { provider: string; type: string; operation: string; outcome: string },
  durationMs: number,
): void {
  const attributes: Attributes = {
    'provider.name': op.provider,
    'provider.type': op.type,
    'provider.operation': op.operation,
    'provider.outcome': op.outcome,
  };
  const i = instruments();
  i.operations.add(1, attributes);
  i.operationDuration.record(durationMs, attributes);
}

/** The number of proxies in each phase (every phase given, zeros included). */
export function recordProxiesByPhase(counts: Readonly<Record<string, number>>): void {
  const gauge = instruments().proxies;
  for (const [phase, count] of Object.entries(counts)) gauge.record(count, { 'proxy.phase': phase });
}

/** One probe through a proxy. */
export function recordProbe(ok: boolean, latencyMs: number): void {
  instruments().probeDuration.record(latencyMs, { 'egress.probe.outcome': ok ? 'ok' : 'failed' });
}

/** One garbage-collection delete (`deleted`, or `failed` when the provider refused). */
export function recordGcDeletion(provider: string, outcome: 'deleted' | 'failed'): void {
  instruments().gcDeletions.add(1, { 'provider.name': provider, 'egress.gc.outcome': outcome });
}

/** How old a relay's last report was when a provider looked. */
export function recordRelayHeartbeatAge(relay: string, ageSeconds: number): void {
  instruments().heartbeatAge.record(ageSeconds, { 'relay.id': relay });
}
