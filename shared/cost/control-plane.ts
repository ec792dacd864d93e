/** The control plane's monthly cost for a fleet, from the bench's measured figures (`control-plane.json`). */
import { z } from 'zod';
import raw from './control-plane.json' with { type: 'json' };

const bySize = z.record(z.string().regex(/^\d+$/), z.number().nonnegative());
export const controlPlaneSchema = z.strictObject({
  about: z.string(),
  measuredOn: z.iso.date(),
  intervalSeconds: z.number().positive(),
  monthlyUsd: z.strictObject({ directlyProbed: bySize, relayBacked: bySize }),
});
export type ControlPlaneFigures = z.infer<typeof controlPlaneSchema>;

export const CONTROL_PLANE: ControlPlaneFigures = Object.freeze(controlPlaneSchema.parse(raw));

/**
 * The measured cost at `n` proxies, read off the bench's sizes: through the origin below the
 * smallest, straight between two, on the last two sizes' slope beyond the largest.
 */
function along(points: Record<string, number>, n: number): number {
  const sizes = Object.keys(points)
    .map(Number)
    .sort((a, b) => a - b);
  const at = (size: number) => points[String(size)] ?? 0;
  let [lo, hi] = [0, sizes[0] ?? 1];
  for (const size of sizes.slice(1)) {
    if (n <= hi) break;
    [lo, hi] = [hi, size];
  }
  const [a, b] = [lo === 0 ? 0 : at(lo), at(hi)];
  return Math.max(0, a + ((b - a) * (n - lo)) / (hi - lo));
}

/**
 * @param directlyProbed - gcp and kubernetes proxies (the check function probes them itself)
 * @param relayBacked - process and kvm proxies (a relay probes them and reports)
 * @param intervalSeconds - the config's checkIntervalSeconds; the figures scale with the cycles a month
 * @returns USD a month; each kind read off its own measurements, so the free tiers count once per kind
 */
export function controlPlaneMonthly(
  directlyProbed: number,
  relayBacked: number,
  intervalSeconds: number,
  figures: ControlPlaneFigures = CONTROL_PLANE,
): number {
  const cycles = figures.intervalSeconds / intervalSeconds;
  const direct = directlyProbed > 0 ? along(figures.monthlyUsd.directlyProbed, directlyProbed) : 0;
  const relayed = relayBacked > 0 ? along(figures.monthlyUsd.relayBacked, relayBacked) : 0;
  return (direct + relayed) * cycles;
}
