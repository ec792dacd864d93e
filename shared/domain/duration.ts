/** Durations as people write them (`90s`, `15m`, `24h`, `7d`, `1h30m`), parsed to milliseconds. */

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+)(ms|s|m|h|d)/g;
const WHOLE = /^(\d+(ms|s|m|h|d))+$/;

/** @returns milliseconds, or `undefined` when `text` is not a duration. */
export function parseDuration(text: string): number | undefined {
  if (!WHOLE.test(text)) return undefined;
  let total = 0;
  for (const [, n, unit] of text.matchAll(PART)) total += Number(n) * (UNIT_MS[unit ?? ''] ?? 0);
  return total;
}
