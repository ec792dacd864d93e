/** Small statistics and formatting helpers for the bench's tables. */

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? 0) + (sorted[mid] ?? 0)) / 2;
}

/** A number with `digits` decimals, without trailing zeros (`1.50` → `1.5`). */
export function fmt(value: number, digits = 2): string {
  if (!Number.isFinite(value)) return 'n/a';
  return String(Number(value.toFixed(digits)));
}

export const ms = (value: number) => `${fmt(value, 0)} ms`;
export const usd = (value: number) => `$${value.toFixed(2)}`;
/** The `met` cell of a strict target row. */
export const yes = (ok: boolean) => (ok ? 'yes' : 'NO');

/** Renders rows as a Markdown table (the same text goes to the terminal and to docs/performance.md). */
export function markdownTable(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n');
}
