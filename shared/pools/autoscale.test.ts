/** autoscale: the replica decision, table-driven, on a controlled clock. */
import { describe, expect, it } from 'vitest';
import { autoscaleSchema, type PoolDemand } from '../domain/autoscale.js';
import { decideReplicas, type AutoscaleInput, type AutoscaleState } from './autoscale.js';

const spec = autoscaleSchema.parse({
  minReplicas: 0,
  maxReplicas: 10,
  target: { inFlightPerMember: 4 },
  scaleUpStabilization: '0s',
  scaleDownAfter: '2m',
  scaleToZeroAfter: '10m',
});
const demand = (inFlight: number, waiting = 0, startedPerSecond = 0): PoolDemand => ({
  inFlight,
  waiting,
  startedPerSecond,
  gateways: 1,
});
const T = Date.UTC(2026, 11, 6);
const base = (over: Partial<AutoscaleInput>): AutoscaleInput => ({
  autoscale: spec,
  demand: demand(0),
  ready: 0,
  previous: 0,
  state: undefined,
  now: T,
  ...over,
});

describe('autoscale: the proportional recommendation (HPA algorithm)', () => {
  it.each([
    ['in-flight 18 over 2 Ready at 4 each', { demand: demand(18), ready: 2, previous: 2 }, 5],
    ['within the 0.1 tolerance keeps the Ready count', { demand: demand(13), ready: 3, previous: 3 }, 3],
    ['clamped to maxReplicas', { demand: demand(400), ready: 2, previous: 2 }, 10],
    ['clamped to minReplicas', { autoscale: { ...spec, minReplicas: 2 }, demand: demand(0), ready: 2, previous: 2 }, 2],
    ['waiting requests count as in-flight demand', { demand: demand(0, 9), ready: 1, previous: 1 }, 3],
    [
      'a requests-per-second target',
      {
        autoscale: { ...spec, target: { requestsPerSecondPerMember: 5 } },
        demand: demand(0, 0, 31),
        ready: 2,
        previous: 2,
      },
      7,
    ],
  ])('%s', (_what, over, want) => {
    expect(decideReplicas(base(over)).recommendation).toBe(want);
  });
});

describe('autoscale: windows, waking and sleeping', () => {
  it('a waiting request wakes a pool at zero at once, whatever the up window', () => {
    const d = decideReplicas(base({ autoscale: { ...spec, scaleUpStabilization: '1m' }, demand: demand(0, 1) }));
    expect(d).toMatchObject({ desired: 1, reason: 'Woken' });
    expect(d.message).toMatch(/desired 0 → 1: demand inFlight 0, waiting 1/);
  });

  it('a scale-up waits for the lowest recommendation of the up window', () => {
    const s = { ...spec, scaleUpStabilization: '30s' };
    const state: AutoscaleState = { recommendations: [{ at: T - 20_000, replicas: 3 }], lastDemandAt: T - 20_000 };
    const d = decideReplicas(base({ autoscale: s, demand: demand(32), ready: 2, previous: 2, state }));
    expect(d).toMatchObject({ recommendation: 8, desired: 3, reason: 'ScaledUp' });
  });

  it('a scale-down takes the highest recommendation of the down window, then goes once it passed', () => {
    const state: AutoscaleState = { recommendations: [{ at: T - 60_000, replicas: 6 }], lastDemandAt: T };
    const held = decideReplicas(base({ demand: demand(8), ready: 6, previous: 6, state }));
    expect(held).toMatchObject({ recommendation: 2, desired: 6, reason: 'Held' });
    const later = decideReplicas(
      base({ demand: demand(8), ready: 6, previous: 6, state: held.state, now: T + 121_000 }),
    );
    expect(later).toMatchObject({ desired: 2, reason: 'ScaledDown' });
  });

  it('no demand keeps one member until scaleToZeroAfter, then zero (no down window on top)', () => {
    const state: AutoscaleState = { recommendations: [{ at: T - 1000, replicas: 1 }], lastDemandAt: T - 60_000 };
    expect(decideReplicas(base({ ready: 1, previous: 1, state }))).toMatchObject({ desired: 1, recommendation: 1 });
    const zero = decideReplicas(base({ ready: 1, previous: 1, state, now: T - 60_000 + 600_000 }));
    expect(zero).toMatchObject({ desired: 0, reason: 'ScaledToZero' });
  });

  it('a new pool with no demand starts at its minimum', () => {
    expect(decideReplicas(base({ previous: undefined }))).toMatchObject({ desired: 0, reason: 'Steady' });
    const floor = decideReplicas(base({ autoscale: { ...spec, minReplicas: 2 }, previous: undefined }));
    expect(floor).toMatchObject({ desired: 2 });
  });

  it('keeps its window bounded: recommendations older than the longest window are dropped', () => {
    const old = Array.from({ length: 50 }, (_, i) => ({ at: T - 600_000 + i, replicas: 9 }));
    const d = decideReplicas(base({ demand: demand(4), ready: 1, previous: 1, state: { recommendations: old } }));
    expect(d.state.recommendations).toEqual([{ at: T, replicas: 1 }]);
  });
});
