/**
 * A pool's last 24 h as the dashboard's charts draw them (no DOM): one point per hour for Ready
 * members, demand, success rate and cost (`status.usage.hours`, docs/api.md "Usage and cost per
 * GiB"), and each chart's summary in words.
 */
import { usd } from '../../cost/usd.js';
import type { ApiPool } from '../schema.js';

type Usage = NonNullable<ApiPool['status']['usage']>;
type Hour = Usage['hours'][number];
type Level = NonNullable<Hour['members']>;

const HOUR_MS = 3_600_000;
/** The hours on the time axis: the current one and the 23 before it. */
export const HOURS = 24;

/** One series: its name and a value per hour (null: nothing to show for that hour). */
export interface Series {
  label: string;
  values: (number | null)[];
}

/** One chart: what it shows, its series, and its summary (the numbers, for people who cannot see it). */
export interface UsageChart {
  id: 'members' | 'demand' | 'success' | 'cost';
  title: string;
  series: Series[];
  summary: string;
  /** The top of the value axis when fixed (a percentage's 100); else it follows the data. */
  top?: number;
}

export interface UsageCharts {
  /** Each hour's start in seconds (uPlot's time axis), oldest first. */
  hours: number[];
  charts: UsageChart[];
}

/** `2`, `2.5`: a mean to one decimal. */
const decimal = (n: number) => String(Math.round(n * 10) / 10);

/** The peak and the time-weighted mean over the hours that observed the level (undefined: none did). */
function overall(levels: readonly (Level | undefined)[]): { peak: number; mean: number } | undefined {
  const seen = levels.filter((l) => l !== undefined);
  if (!seen.length) return undefined;
  const seconds = seen.reduce((s, l) => s + l.seconds, 0);
  const weighted = seen.reduce((s, l) => s + l.mean * l.seconds, 0);
  return { peak: Math.max(...seen.map((l) => l.peak)), mean: seconds > 0 ? weighted / seconds : 0 };
}

/** A level's chart: its peak and its mean per hour. */
function levelChart(id: 'members' | 'demand', title: string, levels: (Level | undefined)[]): UsageChart {
  const all = overall(levels);
  return {
    id,
    title,
    series: [
      { label: 'peak', values: levels.map((l) => l?.peak ?? null) },
      { label: 'mean', values: levels.map((l) => (l && l.seconds > 0 ? l.mean : null)) },
    ],
    summary: `${title}, last 24 h: ${all ? `peak ${decimal(all.peak)}, mean ${decimal(all.mean)}` : 'not observed yet'}`,
  };
}

/**
 * The charts of `usage` over the 24 hours ending with the one `now` is in; undefined when the pool
 * has no usage in them (a pool no gateway used yet: the page says so instead of drawing).
 */
export function usageCharts(usage: Usage | undefined, now: number): UsageCharts | undefined {
  const current = Math.floor(now / HOUR_MS) * HOUR_MS;
  const starts = Array.from({ length: HOURS }, (_, i) => current - (HOURS - 1 - i) * HOUR_MS);
  const byHour = new Map((usage?.hours ?? []).map((h) => [h.hour, h]));
  const hours = starts.map((s) => byHour.get(s));
  if (hours.every((h) => h === undefined)) return undefined;
  const requests = hours.reduce((s, h) => s + (h?.requests ?? 0), 0);
  const answered = hours.reduce((s, h) => s + (h?.succeeded ?? 0), 0);
  const instance = hours.reduce((s, h) => s + (h?.instanceUsd ?? 0), 0);
  const egress = hours.reduce((s, h) => s + (h?.egressUsd ?? 0), 0);
  const rate = requests > 0 ? `${((answered / requests) * 100).toFixed(1)} %` : 'no requests';
  return {
    hours: starts.map((s) => s / 1000),
    charts: [
      levelChart(
        'members',
        'Ready members',
        hours.map((h) => h?.members),
      ),
      levelChart(
        'demand',
        'Demand (in flight or waiting)',
        hours.map((h) => h?.demand),
      ),
      {
        id: 'success',
        title: 'Success rate (%)',
        top: 100,
        series: [
          {
            label: 'answered',
            values: hours.map((h) => (h && h.requests > 0 ? (h.succeeded / h.requests) * 100 : null)),
          },
        ],
        summary: `Success rate, last 24 h: ${rate} (${answered.toLocaleString('en')} of ${requests.toLocaleString('en')} requests answered)`,
      },
      {
        id: 'cost',
        title: 'Cost (USD an hour)',
        series: [
          { label: 'total', values: hours.map((h) => (h ? h.instanceUsd + h.egressUsd : null)) },
          { label: 'egress', values: hours.map((h) => (h ? h.egressUsd : null)) },
        ],
        summary: `Cost, last 24 h: ${usd(instance + egress)} (instances ${usd(instance)}, egress ${usd(egress)})`,
      },
    ],
  };
}
