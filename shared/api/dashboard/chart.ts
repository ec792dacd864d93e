/** The fleet's probe latency as a small inline-SVG bar chart: one bar per proxy, scaled to the slowest. */
import { latency } from './format.js';

const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 640;
const HEIGHT = 170;
const TOP = 22;
const BOTTOM = 30;
const LEFT = 8;

export interface LatencyBar {
  name: string;
  phase: string;
  latencyMs: number | null | undefined;
}

function svg<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | number>,
  text?: string,
): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  if (text !== undefined) el.textContent = text;
  return el;
}

/** A round axis maximum at or above `max` (1, 2, 5 × 10ⁿ). */
export function niceMax(max: number): number {
  if (max <= 0) return 10;
  const step = 10 ** Math.floor(Math.log10(max));
  return [1, 2, 5, 10].map((m) => m * step).find((v) => v >= max) ?? 10 * step;
}

/** The chart, with an accessible summary; proxies without a probe get a hollow stub. */
export function latencyChart(bars: readonly LatencyBar[]): SVGSVGElement {
  const measured = bars.flatMap((b) => (typeof b.latencyMs === 'number' ? [b.latencyMs] : []));
  const top = niceMax(Math.max(0, ...measured));
  const summary = bars.map((b) => `${b.name} ${latency(b.latencyMs)}`).join(', ');
  const root = svg('svg', {
    viewBox: `0 0 ${WIDTH} ${HEIGHT}`,
    role: 'img',
    'aria-label': bars.length ? `Probe latency per proxy: ${summary}` : 'Probe latency: no proxies',
    'data-testid': 'latency-chart',
    class: 'latency-chart',
  });
  const plot = HEIGHT - TOP - BOTTOM;
  const baseline = TOP + plot;
  for (const fraction of [0, 0.5, 1]) {
    const y = baseline - plot * fraction;
    root.append(svg('line', { x1: LEFT, x2: WIDTH - LEFT, y1: y, y2: y, class: fraction ? 'grid' : 'axis' }));
  }
  root.append(svg('text', { x: WIDTH - LEFT, y: TOP - 8, 'text-anchor': 'end', class: 'scale' }, `${top} ms`));
  if (!bars.length) {
    root.append(
      svg('text', { x: WIDTH / 2, y: TOP + plot / 2, 'text-anchor': 'middle', class: 'scale' }, 'no proxies'),
    );
    return root;
  }
  const slot = (WIDTH - 2 * LEFT) / bars.length;
  const width = Math.max(2, Math.min(48, slot * 0.7));
  const labels = slot >= 44;
  bars.forEach((bar, i) => {
    const x = LEFT + slot * i + (slot - width) / 2;
    const value = bar.latencyMs;
    const height = typeof value === 'number' ? Math.max(2, (plot * value) / top) : 4;
    const group = svg('g', { class: `bar phase-${bar.phase}`, 'data-name': bar.name });
    group.append(svg('title', {}, `${bar.name} (${bar.phase}): ${latency(value)}`));
    group.append(
      svg('rect', {
        x,
        y: baseline - height,
        width,
        height,
        rx: 2,
        class: typeof value === 'number' ? 'measured' : 'unmeasured',
      }),
    );
    if (labels && typeof value === 'number') {
      group.append(
        svg(
          'text',
          { x: x + width / 2, y: baseline - height - 4, 'text-anchor': 'middle', class: 'value' },
          `${Math.round(value)}`,
        ),
      );
    }
    if (labels) {
      const name = bar.name.length > 12 ? `${bar.name.slice(0, 11)}…` : bar.name;
      group.append(svg('text', { x: x + width / 2, y: baseline + 16, 'text-anchor': 'middle', class: 'name' }, name));
    }
    root.append(group);
  });
  return root;
}
