/**
 * autoscale: an autoscaled pool on the emulators with a real relay running the `process` provider:
 * gateway demand reports through the API route (duplicated and reordered) scale it up from zero,
 * and it drains back to zero, leaking no member, once the reports expire.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../shared/api/deps.js';
import { postDemand } from '../../shared/api/demand.js';
import { decodeBody } from '../../shared/bus/message.js';
import { handleRequest, type RequestDeps } from '../../shared/requests.js';
import { DemandStore } from '../../shared/store/demand.js';
import { ReportStore } from '../../shared/store/reports.js';
import { eventually } from '../support/eventually.js';
import { drivePool, poolCheckDeps, readyMembers, type PoolDriver } from '../support/pool-driver.js';
import { startRelayHarness, type RelayHarness } from '../support/relay-harness.js';

let h: RelayHarness;
let deps: ReturnType<typeof poolCheckDeps> & { demand: DemandStore };
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

beforeAll(async () => {
  h = await startRelayHarness('autoscale', [24620, 24629], { poolRecoverSeconds: 3, autoscaleIntervalSeconds: 1 });
  deps = { ...poolCheckDeps(h), demand: new DemandStore(h.db) };
  api = { ...h, reports: new ReportStore(h.db, h.logger), pools: deps.pools, demand: deps.demand };
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
    const waiting = setInterval(() => void postDemand(api, 'auto', report(Date.now(), 0, 1)), 500);
    try {
      await eventually(async () => expect(readyMembers(await deps.pools.members('auto'))).toBe(1), 90_000, 250);
    } finally {
      clearInterval(waiting);
    }
    // 5 in flight at 2 a member: 3 members. The same report again, and an older one, are not applied.
    const up = setInterval(() => void postDemand(api, 'auto', report(Date.now(), 5)), 500);
    try {
      await eventually(async () => expect(readyMembers(await deps.pools.members('auto'))).toBe(3), 90_000, 250);
      const latest = Date.now() + 1_000_000;
      expect((await postDemand(api, 'auto', report(latest, 5))).body).toMatchObject({ applied: true });
      expect((await postDemand(api, 'auto', report(latest, 5))).body).toMatchObject({ applied: false });
      expect((await postDemand(api, 'auto', report(latest - 1, 0))).body).toMatchObject({ applied: false });
      const doc = await deps.pools.get('auto');
      expect(doc?.status).toMatchObject({ desiredReplicas: 3, demand: { inFlight: 5, gateways: 1 } });
      const events = await deps.pools.events('auto', 50);
      expect(events.map((e) => e.reason)).toEqual(expect.arrayContaining(['Woken', 'ScaledUp']));
      expect(events.find((e) => e.reason === 'Woken')?.message).toMatch(/desired 0 → 1: demand inFlight 0, waiting 1/);
    } finally {
      clearInterval(up);
    }
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
