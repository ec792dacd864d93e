/** The Usage card's data: 24 hourly points per chart from `status.usage.hours`, gaps where nothing was seen, and the summaries' numbers. */
import { describe, expect, it } from 'vitest';
import type { ApiPool } from '../schema.js';
import { HOURS, usageCharts } from './usage-series.js';

type Usage = NonNullable<ApiPool['status']['usage']>;
type Hour = Usage['hours'][number];

const HOUR = 3_600_000;
const NOW = Date.UTC(2026, 11, 7, 10, 20);
const CURRENT = Date.UTC(2026, 11, 7, 10);
const ZERO = { requests: 0, succeeded: 0, bytesIn: 0, bytesOut: 0, instanceUsd: 0, egressUsd: 0 };

const usage = (hours: Hour[]): Usage => ({
  total: { ...ZERO, since: 0 },
  hours,
  last24h: ZERO,
  folded: {},
  foldedAt: NOW,
});

describe('usageCharts', () => {
  it('has nothing to draw for a pool without usage in the last 24 hours', () => {
    expect(usageCharts(undefined, NOW)).toBeUndefined();
    expect(usageCharts(usage([{ hour: CURRENT - 24 * HOUR, ...ZERO, requests: 5 }]), NOW)).toBeUndefined();
  });

  it('gives every chart a point per hour of the last 24, null where the hour has nothing', () => {
    const charts = usageCharts(
      usage([
        {
          hour: CURRENT - 2 * HOUR,
          ...ZERO,
          requests: 200,
          succeeded: 190,
          instanceUsd: 0.5,
          egressUsd: 0.25,
          members: { peak: 4, mean: 3, seconds: 3600 },
          demand: { peak: 10, mean: 2, seconds: 3600 },
        },
        {
          hour: CURRENT,
          ...ZERO,
          requests: 100,
          succeeded: 50,
          instanceUsd: 0.25,
          members: { peak: 1, mean: 1, seconds: 1200 },
          demand: { peak: 0, mean: 0, seconds: 0 },
        },
      ]),
      NOW,
    );
    expect(charts?.hours).toHaveLength(HOURS);
    expect(charts?.hours.at(-1)).toBe(CURRENT / 1000);
    expect(charts?.hours[0]).toBe((CURRENT - 23 * HOUR) / 1000);
    const byId = new Map(charts?.charts.map((c) => [c.id, c]));
    expect([...byId.keys()]).toEqual(['members', 'demand', 'success', 'cost']);
    const members = byId.get('members');
    expect(members?.series.map((s) => s.label)).toEqual(['peak', 'mean']);
    expect(members?.series[0]?.values.slice(-3)).toEqual([4, null, 1]);
    // A level only seen at its hour's first instant has a peak, no mean yet.
    expect(byId.get('demand')?.series[1]?.values.slice(-3)).toEqual([2, null, null]);
    expect(byId.get('success')?.series[0]?.values.slice(-3)).toEqual([95, null, 50]);
    expect(byId.get('cost')?.series.map((s) => s.values.slice(-3))).toEqual([
      [0.75, null, 0.25],
      [0.25, null, 0],
    ]);
    // Means weighted by the time each hour observed: (3 × 3600 + 1 × 1200) / 4800.
    expect(members?.summary).toBe('Ready members, last 24 h: peak 4, mean 2.5');
    expect(byId.get('demand')?.summary).toBe('Demand (in flight or waiting), last 24 h: peak 10, mean 2');
    expect(byId.get('success')?.summary).toBe('Success rate, last 24 h: 80.0 % (240 of 300 requests answered)');
    expect(byId.get('cost')?.summary).toBe('Cost, last 24 h: $1.00 (instances $0.75, egress $0.25)');
  });

  it('says when the levels were not observed and no request came', () => {
    const charts = usageCharts(usage([{ hour: CURRENT, ...ZERO, instanceUsd: 0.01 }]), NOW);
    const summaries = charts?.charts.map((c) => c.summary);
    expect(summaries).toEqual([
      'Ready members, last 24 h: not observed yet',
      'Demand (in flight or waiting), last 24 h: not observed yet',
      'Success rate, last 24 h: no requests (0 of 0 requests answered)',
      'Cost, last 24 h: $0.0100 (instances $0.0100, egress $0.0000)',
    ]);
  });
});
