/** Every metric the code records is emitted under the name, type, unit and attributes docs/observability.md gives it. */
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, DataPointType, MeterProvider, MetricReader } from '@opentelemetry/sdk-metrics';
import { afterAll, describe, expect, it } from 'vitest';
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

/** The rows of the `## Metrics` table; "the same" attributes repeat the row above. */
function documented(): Row[] {
  const lines = proseLines(readFileSync(join(root, 'docs', 'observability.md'), 'utf8'));
  const start = lines.findIndex((l) => /^## Metrics/.test(l));
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
    const emitted: Row[] = resourceMetrics.scopeMetrics.flatMap((s) =>
      s.metrics.map((m) => ({
        name: m.descriptor.name,
        type: TYPES[m.dataPointType] ?? String(m.dataPointType),
        unit: m.descriptor.unit,
        attributes: Object.keys(m.dataPoints[0]?.attributes ?? {}).sort(),
      })),
    );
    const rows = documented().map((r) => ({ ...r, attributes: [...r.attributes].sort() }));
    expect(rows.length).toBeGreaterThanOrEqual(6);
    const byName = (a: Row, b: Row) => a.name.localeCompare(b.name);
    expect(emitted.sort(byName)).toEqual(rows.sort(byName));
    expect(Object.values(recorders.METRIC_NAMES).sort()).toEqual(rows.map((r) => r.name).sort());
  });
});
