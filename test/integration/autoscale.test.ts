/**
 * autoscale: an autoscaled pool on the emulators with a real relay running the `process` provider:
 * gateway demand reports through the API route (duplicated and reordered) scale it up from zero,
 * and it drains back to zero, leaking no member, once the reports expire.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../shared/api/deps.js';
import { postDemand } from '../../shared/api/demand.js';
import { decodeBody } from '../../shared/bus/message.js';
import { handleRequest, type RequestDeps } from '../../shared/requests.js';
import { FirestoreDemandRepository } from '../../shared/store/firestore/demand.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import { eventually } from '../support/eventually.js';
import { drivePool, poolCheckDeps, readyMembers, type PoolDriver } from '../support/pool-driver.js';
import { startRelayHarness, type RelayHarness } from '../support/relay-harness.js';

let h: RelayHarness;
let deps: ReturnType<typeof poolCheckDeps> & { demand: FirestoreDemandRepository };
let api: ApiDeps;
let driver: PoolDriver | undefined;

const pool = {
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name: 'auto', labels: {} },
  spec: {
    autoscale: {
      minReplicas: 0,
      maxReplicas: 3,
      target: { inFlightPerMember: 2 },
      scaleDownAfter: '2s',
      scaleToZeroAfter: '4s',
    },
    template: { spec: { provider: 'proc', placement: {}, port: 0 } },
  },
};
const report = (sequence: number, inFlight: number, waiting = 0) => ({
  gateway: 'gw-a',
  sequence,
  inFlight,
  startedPerSecond: inFlight,
  waiting,
  intervalSeconds: 5,
});

/** Reports like a gateway: one report at a time, `everyMs` apart, until stopped. */
function reportEvery(everyMs: number, next: () => ReturnType<typeof report>): { stop(): Promise<void> } {
  let running = true;
  const loop = (async () => {
    while (running) {
      await postDemand(api, 'auto', next());
      await sleep(everyMs);
    }
  })();
  return {
    stop: async () => {
      running = false;
      await loop;
    },
  };
}

beforeAll(async () => {
  h = await startRelayHarness('autoscale', [24620, 24629], { poolRecoverSeconds: 3, autoscaleIntervalSeconds: 1 });
  deps = { ...poolCheckDeps(h), demand: new FirestoreDemandRepository(h.db) };
  api = { ...h, reports: new FirestoreReportRepository(h.db, h.logger), pools: deps.pools, demand: deps.demand };
  const requests: RequestDeps = {
    proxies: h.proxies,
    bus: h.bus,
    logger: h.logger,
    maxEvents: 50,
    pools: deps.pools,
    config: h.config,
  };
  const at = Date.now();
  await handleRequest(requests, decodeBody('m-auto', at, {}, JSON.stringify(pool)));
  driver = drivePool(deps, 'auto');
}, 60_000);
afterAll(async () => {
  await driver?.stop();
  await h?.close();
}, 60_000);

describe('autoscale: on the emulators', () => {
  it('rests at zero without demand', async () => {
    await eventually(async () => expect((await deps.pools.get('auto'))?.status.desiredReplicas).toBe(0), 20_000);
    expect(await deps.pools.members('auto')).toEqual([]);
  });

  it('wakes on a waiting request and follows in-flight demand; duplicated and reordered reports change nothing', async () => {
    expect((await postDemand(api, 'auto', report(10, 0, 1))).body).toMatchObject({ applied: true });
    // As a gateway does: the held request is reported every interval until a member serves it.
    const waiting = reportEvery(500, () => report(Date.now(), 0, 1));
    try {
      await eventually(async () => expect(readyMembers(await deps.pools.members('auto'))).toBe(1), 90_000, 250);
    } finally {
      await waiting.stop();
    }
    // 5 in flight at 2 a member: 3 members.
    const up = reportEvery(500, () => report(Date.now(), 5));
    try {
      await eventually(async () => expect(readyMembers(await deps.pools.members('auto'))).toBe(3), 90_000, 250);
      const doc = await deps.pools.get('auto');
      expect(doc?.status).toMatchObject({ desiredReplicas: 3, demand: { inFlight: 5, gateways: 1 } });
      const events = await deps.pools.events('auto', 50);
      expect(events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Woken', 'ScaledUp']));
      expect(events.find((e) => e.reason === 'Woken')?.message).toMatch(/desired 0 → 1: demand inFlight 0, waiting 1/);
    } finally {
      await up.stop();
    }
    // A newer report is applied once; the same again, and an older one, are not. (Checked once the
    // reporter has stopped: a report above its sequences would keep its later ones from being applied,
    // and the pool's demand would vanish a report lifetime on, under the checks above.)
    const latest = Date.now() + 1;
    expect((await postDemand(api, 'auto', report(latest, 5))).body).toMatchObject({ applied: true });
    expect((await postDemand(api, 'auto', report(latest, 5))).body).toMatchObject({ applied: false });
    expect((await postDemand(api, 'auto', report(latest - 1, 0))).body).toMatchObject({ applied: false });
  }, 200_000);

  it('drains back to zero once the reports expire, leaving no member', async () => {
    await eventually(
      async () => {
        const doc = await deps.pools.get('auto');
        expect(doc?.status).toMatchObject({ desiredReplicas: 0, demand: { gateways: 0 } });
        expect(await deps.pools.members('auto')).toEqual([]);
      },
      90_000,
      500,
    );
    expect((await deps.pools.events('auto', 50)).map((e) => e.reason)).toContain('ScaledToZero');
  }, 120_000);
});
