/**
 * Every metric the code records is emitted under the name, type, unit and attributes its document
 * gives it: the product's in docs/observability.md, the gateway's in docs/gateway.md (and the
 * Prometheus names that document shows are the ones its endpoint writes).
 */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { afterAll, describe, expect, it } from 'vitest';
import { GATEWAY_METRIC_NAMES, GatewayMetrics } from '../../gateway/metrics.js';
import * as recorders from '../../shared/telemetry/metrics.js';
import { proseLines } from './markdown.js';

const root = resolve(import.meta.dirname, '..', '..');

/** A reader the test collects from by hand. */
class CollectingReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** One call of every `record*` function of shared/telemetry/metrics.ts. */
const RECORD: Record<string, () => void> = {
  recordProviderOperation: () =>
    recorders.recordProviderOperation({ provider: 'p', type: 'process', operation: 'get', outcome: 'ok' }, 3),
  recordProxiesByPhase: () => recorders.recordProxiesByPhase({ Ready: 1 }),
  recordProbe: () => recorders.recordProbe(true, 5),
  recordGcDeletion: () => recorders.recordGcDeletion('p', 'deleted'),
  recordRelayHeartbeatAge: () => recorders.recordRelayHeartbeatAge('r', 2),
};

interface Row {
  name: string;
  type: string;
  unit: string;
  attributes: string[];
}

/** The rows of the table under `heading` in `doc`; "the same" attributes repeat the row above. */
function documented(doc = 'observability.md', heading = '## Metrics'): Row[] {
  const lines = proseLines(readFileSync(join(root, 'docs', doc), 'utf8'));
  const start = lines.findIndex((l) => l.startsWith(heading));
  const end = lines.findIndex((l, i) => i > start && /^## /.test(l));
  const rows: Row[] = [];
  for (const line of lines.slice(start, end === -1 ? undefined : end)) {
    const cells = line.split(/\s*\|\s*/).slice(1, -1);
    const name = /^`(egress\.[\w.]+)`$/.exec(cells[0] ?? '')?.[1];
    if (!name) continue;
    const named = [...(cells[3] ?? '').matchAll(/`([a-z_]+(?:\.[a-z_]+)+)`/g)].map((m) => m[1] ?? '');
    const attributes = cells[3] === 'the same' ? (rows.at(-1)?.attributes ?? []) : named;
    rows.push({ name, type: cells[1] ?? '', unit: (cells[2] ?? '').replace(/`/g, ''), attributes });
  }
  return rows;
}

const TYPES: Partial<Record<DataPointType, string>> = {
  [DataPointType.SUM]: 'counter',
  [DataPointType.HISTOGRAM]: 'histogram',
  [DataPointType.GAUGE]: 'gauge',
};

/** What a reader emitted, in the rows' shape. */
function emittedRows(resourceMetrics: Awaited<ReturnType<MetricReader['collect']>>['resourceMetrics']): Row[] {
  return resourceMetrics.scopeMetrics.flatMap((s) =>
    s.metrics.map((m) => ({
      name: m.descriptor.name,
      type: TYPES[m.dataPointType] ?? String(m.dataPointType),
      unit: m.descriptor.unit,
      attributes: Object.keys(m.dataPoints[0]?.attributes ?? {}).sort(),
    })),
  );
}

const byName = (a: Row, b: Row) => a.name.localeCompare(b.name);

afterAll(() => metrics.disable());

describe('metrics: emitted as docs/observability.md names them', () => {
  it('has a call here for every record function', () => {
    const exported = Object.keys(recorders).filter((k) => k.startsWith('record'));
    expect(exported.sort()).toEqual(Object.keys(RECORD).sort());
  });

  it('emits every documented metric, and only those, with its type, unit and attributes', async () => {
    const reader = new CollectingReader();
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    for (const record of Object.values(RECORD)) record();
    const { resourceMetrics } = await reader.collect();
    const emitted = emittedRows(resourceMetrics);
    const rows = documented().map((r) => ({ ...r, attributes: [...r.attributes].sort() }));
    expect(rows.length).toBeGreaterThanOrEqual(6);
    expect(emitted.sort(byName)).toEqual(rows.sort(byName));
    expect(Object.values(recorders.METRIC_NAMES).sort()).toEqual(rows.map((r) => r.name).sort());
  });
});

describe('metrics: the gateway emits what docs/gateway.md names', () => {
  /** Every kind of figure the gateway records: answered, banned and failed attempts, a session's, bytes, a refusal. */
  function recordEverything(): GatewayMetrics {
    const gateway = new GatewayMetrics();
    const usage = gateway.recorder('crawl');
    const use = { proxy: 'p1', domain: 'example.com', session: 's1' };
    for (const outcome of ['ok', 'banned', 'failed'] as const) usage.attempt(use, outcome, 0.01);
    usage.bytes(use, 10, 2);
    usage.failure();
    return gateway;
  }

  it('emits every documented instrument, and only those, with its type, unit and attributes', async () => {
    const gateway = recordEverything();
    const emitted = emittedRows(await gateway.collect());
    const rows = documented('gateway.md', '## Usage and metrics').map((r) => ({
      ...r,
      attributes: [...r.attributes].sort(),
    }));
    expect(rows.length).toBe(Object.keys(GATEWAY_METRIC_NAMES).length);
    expect(emitted.sort(byName)).toEqual(rows.sort(byName));
    expect(Object.values(GATEWAY_METRIC_NAMES).sort()).toEqual(rows.map((r) => r.name).sort());
  });

  it('writes every Prometheus series name and label the sample scrape in the doc shows', async () => {
    const gateway = recordEverything();
    const served = await gateway.text();
    const doc = readFileSync(join(root, 'docs', 'gateway.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Usage and metrics'), doc.indexOf('## In Node code'));
    const sample = [...section.matchAll(/^(egress_gateway_\w+)(?:\{([^}]*)\})? \d+$/gm)];
    expect(sample.length).toBeGreaterThanOrEqual(Object.keys(GATEWAY_METRIC_NAMES).length);
    const shape = (name: string, labels = '') =>
      `${name}{${[...labels.matchAll(/(\w+)=/g)]
        .map((m) => m[1])
        .sort()
        .join(',')}}`;
    const servedShapes = new Set(
      [...served.matchAll(/^(\w+)(?:\{([^}]*)\})? \S+$/gm)].map((m) => shape(m[1] ?? '', m[2])),
    );
    for (const [, name, labels] of sample) expect(servedShapes).toContain(shape(name ?? '', labels));
  });
});
