/**
 * autoscale guarantees: seeded scenarios. Demand reports from several gateways, each delivered once
 * or twice, in a shuffled order and concurrently, converge on the Firestore store (the emulator) to
 * each gateway's newest report, and their usage counters to what each gateway counted, once; and
 * whatever demand came before, once it vanishes the autoscaler asks for zero members within
 * scaleToZeroAfter (plus one interval), so none is left running.
 */
import { describe, expect, it } from 'vitest';
import { autoscaleSchema, type DemandReport } from '../../shared/domain/autoscale.js';
import { decideReplicas, type AutoscaleState } from '../../shared/pools/autoscale.js';
import { FirestoreDemandRepository } from '../../shared/store/firestore/demand.js';
import { isLive, usageOfDoc } from '../../shared/store/demand-rules.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed } from './support/prng.js';

const FILE = 'test/guarantees/autoscale-demand.test.ts';
const SEED = suiteSeed(0x0a170c41);
const COUNT = scenarioCount(20, 200);

describe('autoscale: duplicated and reordered demand reports converge', () => {
  it(`${COUNT} seeded scenarios on the emulator`, async () => {
    const db = createFirestore(emulatorEnv('autoscale-demand').projectId);
    const store = new FirestoreDemandRepository(db);
    const now = Date.now();
    try {
      for (let s = 0; s < COUNT; s++) {
        const rng = mulberry32(SEED + s);
        const pool = `p${s}`;
        const gateways = 1 + Math.floor(rng.next() * 3);
        const sent: DemandReport[] = [];
        // pool cost: each gateway's usage counters, in series it begins now and then; what it used is
        // the sum of each series' last counters.
        const used = new Map<string, number>();
        for (let g = 0; g < gateways; g++) {
          const series = { since: 0, requests: 0 };
          const finals = new Map<number, number>();
          for (let k = 1; k <= 1 + Math.floor(rng.next() * 4); k++) {
            if (k === 1 || rng.chance(0.3)) Object.assign(series, { since: k, requests: 0 });
            series.requests += Math.floor(rng.next() * 10);
            finals.set(series.since, series.requests);
            sent.push({
              gateway: `gw-${g}`,
              sequence: k,
              inFlight: Math.floor(rng.next() * 20),
              startedPerSecond: 0,
              waiting: Math.floor(rng.next() * 2),
              intervalSeconds: 60,
              held: [],
              usage: { ...series, succeeded: series.requests, bytesIn: series.requests * 100, bytesOut: 0 },
            });
          }
          used.set(
            `gw-${g}`,
            [...finals.values()].reduce((a, b) => a + b, 0),
          );
        }
        const deliveries = rng.shuffle(sent.flatMap((r) => (rng.chance(0.4) ? [r, r] : [r])));
        // Two at a time: concurrent copies race in the store's transaction.
        for (let i = 0; i < deliveries.length; i += 2)
          await Promise.all(deliveries.slice(i, i + 2).map((r) => store.record(pool, r, now)));
        const newest = new Map<string, DemandReport>();
        for (const r of sent) if ((newest.get(r.gateway)?.sequence ?? 0) < r.sequence) newest.set(r.gateway, r);
        const live = (await store.all(pool)).filter((d) => isLive(d, now + 1));
        const got = live.map((d) => [d.gateway, d.sequence, d.inFlight, d.waiting]).sort();
        const want = [...newest.values()].map((r) => [r.gateway, r.sequence, r.inFlight, r.waiting]).sort();
        expect(got, replayHint(FILE, SEED + s)).toEqual(want);
        const counted = (await store.all(pool)).map((d) => [d.gateway, usageOfDoc(d).requests, usageOfDoc(d).bytesIn]);
        expect(counted.sort(), replayHint(FILE, SEED + s)).toEqual(
          [...used].map(([gateway, requests]) => [gateway, requests, requests * 100]).sort(),
        );
      }
    } finally {
      await db.terminate();
    }
  }, 300_000);
});

describe('autoscale: no member left once demand vanishes', () => {
  it(`${COUNT * 10} seeded demand traces end at zero within scaleToZeroAfter`, () => {
    for (let s = 0; s < COUNT * 10; s++) {
      const rng = mulberry32(SEED + 7919 * s);
      const autoscale = autoscaleSchema.parse({
        minReplicas: 0,
        maxReplicas: 1 + Math.floor(rng.next() * 20),
        target:
          rng.next() < 0.5
            ? { inFlightPerMember: 1 + rng.next() * 5 }
            : { requestsPerSecondPerMember: 1 + rng.next() * 5 },
        scaleUpStabilization: `${Math.floor(rng.next() * 30)}s`,
        scaleDownAfter: `${Math.floor(rng.next() * 120)}s`,
        scaleToZeroAfter: `${1 + Math.floor(rng.next() * 300)}s`,
      });
      let now = Date.UTC(2026, 11, 6);
      let previous: number | undefined;
      let state: AutoscaleState | undefined;
      const step = (inFlight: number, waiting: number, startedPerSecond: number) => {
        const ready = previous ?? 0;
        const d = decideReplicas({
          autoscale,
          demand: { inFlight, waiting, startedPerSecond, gateways: 1 },
          ready,
          previous,
          state,
          now,
        });
        expect(d.desired, replayHint(FILE, SEED + 7919 * s)).toBeLessThanOrEqual(autoscale.maxReplicas);
        previous = d.desired;
        state = d.state;
        now += 5000;
      };
      for (let t = 0; t < 40; t++)
        step(Math.floor(rng.next() * 50), rng.next() < 0.1 ? 1 : 0, Math.floor(rng.next() * 30));
      const toZero = 300_000 + 5000;
      for (let t = 0; t <= toZero / 5000 + 1; t++) step(0, 0, 0);
      expect(previous, replayHint(FILE, SEED + 7919 * s)).toBe(0);
    }
  });
});
