/**
 * Rotation without gaps, on the emulators with a real relay and real proxy processes: a pool of 20
 * with minAvailable 18 is fully rolled (template change) and fully rotated (maxAge), with two pool
 * reconciles racing all along, while the members are sampled every 250 ms. The serving members
 * (Ready, or out of Ready only for a probe that timed out: test/support/pool-driver.ts#servingMembers)
 * never drop below 18, and the pool never has more than replicas + maxSurge members, drained ones
 * still being deleted included.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PoolApplyRequest } from '../../shared/domain/pool.js';
import { TEMPLATE_LABEL } from '../../shared/pools/plan.js';
import { templateHash } from '../../shared/domain/pool.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import type { FirestorePoolRepository } from '../../shared/store/firestore/pools.js';
import { eventually } from '../support/eventually.js';
import { drivePool, poolCheckDeps, readyMembers, samplePool, type PoolDriver } from '../support/pool-driver.js';
import { proxyPorts, startRelayHarness, type RelayHarness } from '../support/relay-harness.js';

let h: RelayHarness;
let deps: CheckDeps & { pools: FirestorePoolRepository };
let driver: PoolDriver | undefined;
/** The pool controller's clock: moved an hour on to make every member due for maxAge. */
let shift = 0;

const request = (labels: Record<string, string>): PoolApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action: 'apply',
  metadata: { name: 'rot', labels: {} },
  spec: {
    replicas: 20,
    minAvailable: 18,
    maxSurge: 2,
    template: { metadata: { labels }, spec: { provider: 'proc', placement: {}, port: 0, maxAge: '1h' } },
  },
});

/**
 * Waits until the pool has exactly 20 live members, all Ready and made from `template`. A roll takes
 * about a minute here, but each surge waits for a drained member's delete, and under a full
 * `npm test` one roll took over 300 s: the bound is 600 s.
 */
async function settled(labels: Record<string, string>, ms: number, born?: number) {
  const hash = templateHash(request(labels).spec.template);
  await eventually(
    async () => {
      const members = await deps.pools.members('rot');
      const live = members.filter((m) => !m.deletionRequestedAt);
      expect(members.length, 'members, drained ones included').toBe(20);
      expect(readyMembers(live)).toBe(20);
      expect(live.every((m) => m.metadata.labels[TEMPLATE_LABEL] === hash)).toBe(true);
      if (born !== undefined) expect(live.every((m) => Date.parse(m.createdAt) >= born)).toBe(true);
      expect((await deps.pools.get('rot'))?.status).toMatchObject({ replicas: 20, readyReplicas: 20 });
    },
    ms,
    500,
  );
}

beforeAll(async () => {
  // replicas + maxSurge = 22 members at most, drained ones included; room for 30.
  h = await startRelayHarness('pool-rotation', proxyPorts(25800, 30), { unhealthyAfter: 3 });
  deps = poolCheckDeps(h);
  driver = drivePool(deps, 'rot', () => Date.now() + shift);
}, 60_000);
afterAll(async () => {
  await driver?.stop();
  await h?.close();
}, 60_000);

describe('pool rotation without gaps', () => {
  it('comes up with 20 Ready members', async () => {
    await deps.pools.apply(request({ v: '1' }), Date.now(), Date.now());
    await settled({ v: '1' }, 120_000);
  }, 150_000);

  it('a template change rolls all 20, never fewer than 18 serving, never more than 22 members', async () => {
    const sampler = samplePool(deps.pools, 'rot');
    const started = Date.now();
    await deps.pools.apply(request({ v: '2' }), Date.now(), Date.now());
    await settled({ v: '2' }, 600_000, started);
    await sampler.stop();
    const serving = sampler.samples.map((s) => s.serving);
    h.logger.info('rotation samples', {
      count: serving.length,
      min: Math.min(...serving),
      minReady: Math.min(...sampler.samples.map((s) => s.ready)),
      maxMembers: Math.max(...sampler.samples.map((s) => s.members)),
      seconds: (Date.now() - started) / 1000,
    });
    expect(serving.length).toBeGreaterThan(20);
    expect(Math.min(...serving)).toBeGreaterThanOrEqual(18);
    expect(Math.max(...sampler.samples.map((s) => s.members))).toBeLessThanOrEqual(22);
  }, 630_000);

  it('maxAge rotates all 20 the same way, and no member is rotated in place', async () => {
    const before = new Map(
      (await deps.pools.members('rot')).map((m) => [m.metadata.name, m.status.instance?.createdAt]),
    );
    const sampler = samplePool(deps.pools, 'rot');
    const started = Date.now() + 3_600_000;
    shift = 3_600_000 + 60_000;
    await settled({ v: '2' }, 600_000, started);
    await sampler.stop();
    const serving = sampler.samples.map((s) => s.serving);
    expect(serving.length).toBeGreaterThan(20);
    expect(Math.min(...serving)).toBeGreaterThanOrEqual(18);
    expect(Math.max(...sampler.samples.map((s) => s.members))).toBeLessThanOrEqual(22);
    // Every old member left as a whole: none kept its name with a new instance.
    const after = await deps.pools.members('rot');
    expect(after.some((m) => before.has(m.metadata.name))).toBe(false);
    const events = await deps.pools.events('rot', 50);
    expect(events.some((e) => e.reason === 'MemberDrained' && e.message.includes('maxAge'))).toBe(true);
  }, 630_000);
});
