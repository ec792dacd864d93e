/**
 * The dashboard's Usage card: one pool's last 24 h as four uPlot charts (Ready members, demand,
 * success rate, cost), each with its numbers in words; a pool without usage gets a sentence instead.
 */
import uPlot from 'uplot';
import type { Pool } from './api-client.js';
import { byId, h } from './dom.js';
import { usageCharts, type UsageChart } from './usage-series.js';

const HEIGHT = 150;
/** What is drawn now (a poll that brings the same data redraws nothing), and the pools the select offers. */
let shown: { key: string; plots: uPlot[] } | undefined;
let pools: readonly Pool[] = [];

/** The palette's colours for the canvas, which cannot read CSS variables itself. */
function palette(): { series: string[]; axis: string; grid: string } {
  const css = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => css.getPropertyValue(name).trim() || fallback;
  return {
    series: [v('--accent', '#2457c5'), v('--warn', '#9a5b00')],
    axis: v('--muted', '#5d6878'),
    grid: v('--line', '#dde2e8'),
  };
}

/** Two charts a row in the card, each at least 260 px wide. */
function chartWidth(): number {
  const body = byId('usage-charts');
  return Math.max(260, Math.floor((body.clientWidth - 16) / 2));
}

function plot(c: UsageChart, hours: number[], target: HTMLElement): uPlot {
  const colours = palette();
  const axis = { stroke: colours.axis, grid: { stroke: colours.grid, width: 1 }, ticks: { stroke: colours.grid } };
  return new uPlot(
    {
      width: chartWidth(),
      height: HEIGHT,
      cursor: { drag: { x: false, y: false } },
      scales: { y: { range: (_u, _min, max) => [0, c.top ?? (max > 0 ? max * 1.1 : 1)] } },
      axes: [axis, { ...axis, size: 56 }],
      series: [
        { label: 'hour' },
        ...c.series.map((s, i) => ({
          label: s.label,
          stroke: colours.series[i] ?? colours.axis,
          width: 2,
          points: { show: true, size: 5 },
        })),
      ],
    },
    [hours, ...c.series.map((s) => s.values)],
    target,
  );
}

function figure(c: UsageChart, hours: number[]): { element: HTMLElement; plot: uPlot } {
  const target = h('div', { class: 'usage-plot', role: 'img', 'aria-label': c.summary });
  const element = h(
    'figure',
    { class: 'chart usage-chart', 'data-testid': `usage-chart-${c.id}` },
    h('figcaption', {}, c.title),
    target,
    h('p', { class: 'muted usage-summary', 'data-testid': `usage-summary-${c.id}` }, c.summary),
  );
  return { element, plot: plot(c, hours, target) };
}

/** Keeps the select's options in line with the pools, the chosen one kept while it exists. */
function syncSelect(select: HTMLSelectElement): void {
  const names = pools.map((p) => p.metadata.name);
  const current = Array.from(select.options).map((o) => o.value);
  if (current.join('\n') !== names.join('\n')) {
    const chosen = select.value;
    select.replaceChildren(...names.map((n) => h('option', { value: n }, n)));
    select.value = names.includes(chosen) ? chosen : (names[0] ?? '');
  }
  select.disabled = names.length === 0;
}

/** Draws the chosen pool's last 24 h, unless what is drawn is already that. */
function draw(now: number): void {
  const select = byId<HTMLSelectElement>('usage-pool');
  syncSelect(select);
  const pool = pools.find((p) => p.metadata.name === select.value);
  const data = pool && usageCharts(pool.status.usage, now);
  const key = JSON.stringify([pool?.metadata.name, data]);
  if (shown?.key === key) return;
  for (const p of shown?.plots ?? []) p.destroy();
  const body = byId('usage-charts');
  const empty = (text: string) => h('p', { class: 'muted empty', 'data-testid': 'usage-empty' }, text);
  if (!pool) {
    body.replaceChildren(empty('No pools: apply a kind: ProxyPool document to see its last 24 hours here.'));
    shown = { key, plots: [] };
  } else if (!data) {
    const name = pool.metadata.name;
    body.replaceChildren(
      empty(
        `No usage of pool ${name} in the last 24 hours: its charts begin with the first request a gateway routes to it (username key pool-${name}).`,
      ),
    );
    shown = { key, plots: [] };
  } else {
    body.replaceChildren();
    const figures = data.charts.map((c) => {
      const f = figure(c, data.hours);
      body.append(f.element);
      return f;
    });
    shown = { key, plots: figures.map((f) => f.plot) };
  }
}

/** The Usage card for this poll's pools (drawn again only when the chosen pool's hours changed). */
export function renderUsage(next: readonly Pool[], now: number): void {
  pools = next;
  draw(now);
}

byId('usage-pool').addEventListener('change', () => draw(Date.now()));
window.addEventListener('resize', () => {
  for (const p of shown?.plots ?? []) p.setSize({ width: chartWidth(), height: HEIGHT });
});
