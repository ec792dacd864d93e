import { describe, expect, it } from 'vitest';
import { POOL_LABEL, templateHash, type PoolSpec } from '../domain/pool.js';
import { initialPoolStatus, type PoolDoc } from '../domain/pool-status.js';
import { initialStatus, type ProxyDoc } from '../domain/status.js';
import { planPool, shares, TEMPLATE_LABEL, type PlanInput } from './plan.js';

const T0 = Date.parse('2026-12-01T00:00:00Z');

function pool(spec: Partial<PoolSpec> = {}): PoolDoc {
  return {
    apiVersion: 'egress.dev/v1',
    kind: 'ProxyPool',
    metadata: { name: 'p', labels: {} },
    spec: {
      replicas: 6,
      minAvailable: 5,
      maxSurge: 1,
      template: { metadata: { labels: {} }, spec: { provider: 'a', placement: {}, port: 0 } },
      spread: [
        { provider: 'a', placement: {} },
        { provider: 'b', placement: {} },
      ],
      ...spec,
    },
    generation: 1,
    requestTime: 0,
    createdAt: new Date(T0).toISOString(),
    status: initialPoolStatus(),
  };
}

let serial = 0;
function member(p: PoolDoc, provider: string, phase: ProxyDoc['status']['phase'] = 'Ready', at = T0): ProxyDoc {
  serial++;
  return {
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: {
      name: `p-m${String(serial).padStart(3, '0')}`,
      labels: { [POOL_LABEL]: 'p', [TEMPLATE_LABEL]: templateHash(p.spec.template) },
    },
    spec: { provider, placement: {}, port: 0 },
    generation: 1,
    requestTime: 0,
    createdAt: new Date(at).toISOString(),
    status: {
      ...initialStatus(),
      phase,
      instance: {
        name: 'i',
        ip: '127.0.0.1',
        port: 1,
        state: 'Running',
        createdAt: new Date(at).toISOString(),
        specHash: 'h',
      },
    },
  };
}

const input = (p: PoolDoc, members: ProxyDoc[], extra: Partial<PlanInput> = {}): PlanInput => ({
  pool: p,
  members,
  providerDown: () => undefined,
  now: T0 + 1000,
  recoverAfterMs: 60_000,
  unhealthyAfter: 3,
  neverReadyLimit: 3,
  ...extra,
});

const providers = (creates: { entry: { provider: string } }[]) => creates.map((c) => c.entry.provider).sort();

describe('planPool', () => {
  it('a new pool of 6 over two entries creates 3 + 3', () => {
    const plan = planPool(input(pool(), []));
    expect(providers(plan.creates)).toEqual(['a', 'a', 'a', 'b', 'b', 'b']);
    expect(plan.drains).toEqual([]);
    expect(plan.entries.map((e) => e.desired)).toEqual([3, 3]);
  });

  it('a settled pool does nothing', () => {
    const p = pool();
    const members = [...['a', 'a', 'a', 'b', 'b', 'b'].map((x) => member(p, x))];
    const plan = planPool(input(p, members));
    expect(plan).toMatchObject({ creates: [], drains: [], settled: true, ready: 6 });
  });

  it('a template change surges: one new member, and an old one drained only once the new one is Ready', () => {
    const p = pool();
    const old = ['a', 'a', 'a', 'b', 'b', 'b'].map((x) => member(p, x));
    const changed = pool({ template: { metadata: { labels: { v: '2' } }, spec: p.spec.template.spec } });
    let plan = planPool(input(changed, old));
    expect(plan.creates).toHaveLength(1);
    expect(plan.drains).toEqual([]);
    const fresh = member(changed, plan.creates[0]?.entry.provider ?? 'a', 'Provisioning');
    plan = planPool(input(changed, [...old, fresh]));
    expect(plan).toMatchObject({ creates: [], drains: [] });
    fresh.status.phase = 'Ready';
    plan = planPool(input(changed, [...old, fresh]));
    expect(plan.drains).toHaveLength(1);
    expect(plan.drains[0]?.reason).toBe('template');
  });

  it('a banned member surges: it no longer counts as Ready, and is drained once its replacement is Ready', () => {
    const p = pool();
    const members = ['a', 'a', 'a', 'b', 'b', 'b'].map((x) => member(p, x));
    const banned = members[3]!;
    const ban = { banned: (m: ProxyDoc) => m === banned };
    let plan = planPool(input(p, members, ban));
    expect(plan.ready).toBe(5);
    expect(providers(plan.creates)).toEqual(['b']);
    expect(plan.drains).toEqual([]);
    expect(plan.waiting).toEqual([{ name: banned.metadata.name, reason: 'banned' }]);
    const fresh = member(p, 'b', 'Ready');
    plan = planPool(input(p, [...members, fresh], ban));
    expect(plan.drains).toEqual([{ name: banned.metadata.name, reason: 'banned' }]);
  });

  it('scale-down removes the least healthy first, then the newest', () => {
    const p = pool({ replicas: 2, minAvailable: 2 });
    const members = [
      member(p, 'a', 'Ready', T0),
      member(p, 'a', 'Ready', T0 + 10),
      member(p, 'a', 'Unhealthy', T0),
      member(p, 'b', 'Ready', T0),
      member(p, 'b', 'Ready', T0 + 20),
      member(p, 'b', 'Ready', T0 + 5),
    ];
    const plan = planPool(input(p, members));
    const names = (i: number[]) => i.map((k) => members[k]?.metadata.name).sort();
    expect(plan.drains.map((d) => d.name).sort()).toEqual(names([1, 2, 4, 5]));
    expect(plan.creates).toEqual([]);
  });

  it('autoscale: scaling down by the decided replicas never drains a member a session holds', () => {
    const p = pool({ replicas: 4, minAvailable: 0, spread: undefined });
    const members = [0, 1, 2, 3].map((i) => member(p, 'a', 'Ready', T0 + i));
    const held = new Set([members[3]!.metadata.name, members[2]!.metadata.name]);
    const plan = planPool(input(p, members, { replicas: 1, held }));
    // Newest go first, but the two newest are held: the free ones go, the held ones stay over the one wanted.
    expect(plan.drains.map((d) => d.name).sort()).toEqual([members[0]!.metadata.name, members[1]!.metadata.name]);
    expect(plan.settled).toBe(false);
    const after = planPool(input(p, [members[2]!, members[3]!], { replicas: 1, held }));
    expect(after.drains).toEqual([]);
    // Over by held members only: at rest until the sessions let them go.
    expect(after.settled).toBe(true);
    expect(planPool(input(p, [members[2]!, members[3]!], { replicas: 1 })).drains).toEqual([
      { name: members[3]!.metadata.name, reason: 'surplus' },
    ]);
  });

  it('maxSurge 0 replaces in place, one Ready member at a time within minAvailable', () => {
    const p = pool({ maxSurge: 0 });
    const old = ['a', 'a', 'a', 'b', 'b', 'b'].map((x) => member(p, x));
    const changed = pool({ maxSurge: 0, template: { metadata: { labels: { v: '2' } }, spec: p.spec.template.spec } });
    const plan = planPool(input(changed, old));
    expect(plan.creates).toEqual([]);
    expect(plan.drains).toHaveLength(1);
  });

  it('scale to 0 drains every member and keeps the pool', () => {
    const p = pool({ replicas: 0, minAvailable: 0 });
    const members = ['a', 'b'].map((x) => member(p, x));
    const plan = planPool(input(p, members));
    expect(plan.drains).toHaveLength(2);
    expect(plan.finalise).toBe(false);
  });

  it('an unhealthy provider moves its share, and it moves back only after the recovery delay', () => {
    const p = pool();
    const members = ['a', 'a', 'a', 'b', 'b', 'b'].map((x) => member(p, x));
    const down = planPool(input(p, members, { providerDown: (x) => (x === 'b' ? 'no heartbeat' : undefined) }));
    expect(down.entries.map((e) => [e.available, e.desired])).toEqual([
      [true, 6],
      [false, 0],
    ]);
    expect(providers(down.creates)).toEqual(['a']);
    expect(down.drains).toEqual([]);
    p.status.entries = down.entries;
    // b is healthy again 30 s later: too soon (60 s), the share stays on a.
    const soon = planPool(input(p, members, { now: T0 + 31_000 }));
    expect(soon.entries[1]?.available).toBe(false);
    const later = planPool(input(p, members, { now: T0 + 62_000 }));
    expect(later.entries.map((e) => [e.available, e.desired])).toEqual([
      [true, 3],
      [true, 3],
    ]);
  });

  it('a relapse soon after recovering doubles the delay', () => {
    const p = pool();
    const members = ['a', 'a', 'a', 'b', 'b', 'b'].map((x) => member(p, x));
    const bDown = { providerDown: (x: string) => (x === 'b' ? 'down' : undefined) };
    p.status.entries = planPool(input(p, members, bDown)).entries;
    p.status.entries = planPool(input(p, members, { now: T0 + 62_000 })).entries;
    p.status.entries = planPool(input(p, members, { ...bDown, now: T0 + 70_000 })).entries;
    expect(p.status.entries[1]?.failures).toBe(2);
    expect(planPool(input(p, members, { now: T0 + 70_000 + 90_000 })).entries[1]?.available).toBe(false);
    expect(planPool(input(p, members, { now: T0 + 70_000 + 121_000 })).entries[1]?.available).toBe(true);
  });

  it('QuotaExceeded on an entry moves its share like an unhealthy provider', () => {
    const p = pool();
    const members = ['a', 'a', 'a', 'b', 'b'].map((x) => member(p, x));
    const stuck = member(p, 'b', 'Provisioning');
    stuck.status.retry = { attempts: 1, notBefore: new Date(T0 + 60_000).toISOString(), reason: 'QuotaExceeded' };
    const plan = planPool(input(p, [...members, stuck]));
    expect(plan.entries[1]).toMatchObject({ available: false, reason: 'QuotaExceeded' });
    expect(providers(plan.creates)).toEqual(['a']);
    // The stuck member leaves like any other: once its replacement is Ready.
    expect(plan.drains).toEqual([]);
    expect(plan.waiting.map((d) => d.name)).toContain(stuck.metadata.name);
  });

  it('a deleted pool drains everything and finalises once no member is left', () => {
    const p = pool();
    p.deletionRequestedAt = new Date(T0).toISOString();
    expect(planPool(input(p, [member(p, 'a')])).drains).toHaveLength(1);
    expect(planPool(input(p, [])).finalise).toBe(true);
  });

  it('maxAge: members past it surge-replaced; never fewer than minAvailable Ready, never above replicas + maxSurge', () => {
    const p = pool({
      replicas: 20,
      minAvailable: 18,
      maxSurge: 2,
      template: { metadata: { labels: {} }, spec: { provider: 'a', placement: {}, port: 0, maxAge: '1h' } },
      spread: undefined,
    });
    const world = simulate(
      p,
      Array.from({ length: 20 }, () => member(p, 'a', 'Ready', T0)),
      { deleteAfter: 0 },
    );
    expect(world.members.every((m) => Date.parse(m.createdAt) > T0)).toBe(true);
    expect(world.members).toHaveLength(20);
    expect(world.minReady).toBeGreaterThanOrEqual(18);
    expect(world.maxMembers).toBeLessThanOrEqual(22);
  });

  it('draining members slow to delete count against replicas + maxSurge: a rotation never has more members', () => {
    const p = pool({
      replicas: 20,
      minAvailable: 18,
      maxSurge: 2,
      template: { metadata: { labels: {} }, spec: { provider: 'a', placement: {}, port: 0, maxAge: '1h' } },
      spread: undefined,
    });
    const world = simulate(
      p,
      Array.from({ length: 20 }, () => member(p, 'a', 'Ready', T0)),
      { deleteAfter: 5 },
    );
    expect(world.settled).toBe(true);
    const live = world.members.filter((m) => !m.deletionRequestedAt);
    expect(live).toHaveLength(20);
    expect(live.every((m) => Date.parse(m.createdAt) > T0)).toBe(true);
    expect(world.minReady).toBeGreaterThanOrEqual(18);
    expect(world.maxMembers).toBeLessThanOrEqual(22);
  });

  it('draining members on a down provider do not hold its share from moving to the other entries', () => {
    const p = pool();
    const members = ['a', 'a', 'a', 'b', 'b', 'b'].map((x) => member(p, x));
    const down = (x: string) => (x === 'b' ? 'no heartbeat' : undefined);
    // b's members are never deleted while b is down; a still takes all 6.
    const world = simulate(p, members, { deleteAfter: 1, providerDown: down });
    const onA = world.members.filter((m) => m.spec.provider === 'a' && !m.deletionRequestedAt);
    expect(onA.filter((m) => m.status.phase === 'Ready')).toHaveLength(6);
    expect(world.members.filter((m) => m.deletionRequestedAt).map((m) => m.spec.provider)).toEqual(['b', 'b', 'b']);
    expect(world.minReady).toBeGreaterThanOrEqual(5);
  });
});

/** A pool over `a` (tier 0, at most 2 members) and `b` (tier 1): own capacity first, the vendor's when it is full. */
const tiered = (replicas: number, extra: Partial<PoolSpec> = {}) =>
  pool({
    replicas,
    minAvailable: Math.min(replicas, 1),
    spread: [
      { provider: 'a', placement: {}, tier: 0, maxReplicas: 2 },
      { provider: 'b', placement: {}, tier: 1 },
    ],
    ...extra,
  });
const desiredOf = (plan: { entries: { desired: number }[] }) => plan.entries.map((e) => e.desired);

describe('tiers: placement over spread tiers', () => {
  it.each([
    [0, [0, 0]],
    [1, [1, 0]],
    [2, [2, 0]],
    [3, [2, 1]],
    [7, [2, 5]],
  ])('replicas %i fill tier 0 up to its cap, then tier 1: %j', (replicas, desired) => {
    expect(desiredOf(planPool(input(tiered(replicas), [])))).toEqual(desired);
  });

  it('shares: within a tier evenly and by holding, caps respected, tiers in order whatever the entry order', () => {
    const e = (tier: number, maxReplicas?: number, available = true, reason?: string) => ({
      provider: 'x',
      placement: {},
      tier,
      ...(maxReplicas !== undefined && { maxReplicas }),
      desired: 0,
      members: 0,
      ready: 0,
      available,
      ...(reason !== undefined && { reason }),
      failures: 0,
    });
    expect(shares(5, [e(1), e(0), e(0)], [0, 0, 0])).toEqual([0, 3, 2]);
    expect(shares(5, [e(1), e(0), e(0)], [0, 0, 4])).toEqual([0, 2, 3]);
    expect(shares(5, [e(0, 1), e(0), e(2)], [0, 0, 0])).toEqual([1, 4, 0]);
    expect(shares(6, [e(0, 1), e(0, 2), e(2, 1)], [0, 0, 0])).toEqual([1, 2, 1]);
    // An unavailable entry gets nothing while another can take members; with none available, all fill.
    expect(shares(3, [e(0, undefined, false), e(1)], [0, 0])).toEqual([0, 3]);
    expect(shares(3, [e(0, 2, false), e(1, undefined, false)], [0, 0])).toEqual([2, 1]);
    // Out of quota: no more members there, but the good ones stay (a down provider keeps none).
    expect(shares(2, [e(0, 2, false, 'QuotaExceeded'), e(1)], [1, 0])).toEqual([1, 1]);
    expect(shares(2, [e(0, 2, false, 'ProviderUnhealthy'), e(1)], [1, 0])).toEqual([0, 2]);
    expect(shares(1, [e(0, 2, false, 'QuotaExceeded'), e(1)], [2, 0])).toEqual([1, 0]);
  });

  it('scale-down drains tier 1 first: back to tier 0', () => {
    const up = tiered(5);
    const members = ['a', 'a', 'b', 'b', 'b'].map((x) => member(up, x));
    const down = tiered(2);
    const plan = planPool(input(down, members));
    expect(desiredOf(plan)).toEqual([2, 0]);
    expect(plan.creates).toEqual([]);
    const drained = new Set(plan.drains.map((d) => d.name));
    expect(members.filter((m) => drained.has(m.metadata.name)).map((m) => m.spec.provider)).toEqual(['b', 'b', 'b']);
  });

  it('failover across tiers: tier 0 down moves its share to tier 1, and it comes back to tier 0 after the recovery delay, never below minAvailable', () => {
    const p = tiered(3, { minAvailable: 3 });
    const members = ['a', 'a', 'b'].map((x) => member(p, x));
    const aDown: PlanInput['providerDown'] = (x) => (x === 'a' ? 'no heartbeat' : undefined);
    const out = planPool(input(p, members, { providerDown: aDown }));
    expect(desiredOf(out)).toEqual([0, 3]);
    // One at a time (maxSurge 1): the down entry's members count until they are deleted.
    expect(providers(out.creates)).toEqual(['b']);
    const during = simulate(p, members, { deleteAfter: 1, providerDown: aDown });
    expect(during.settled).toBe(true);
    expect(during.members.filter((m) => !m.deletionRequestedAt).map((m) => m.spec.provider)).toEqual(['b', 'b', 'b']);
    // Past the recovery delay (60 s) after the outage; the members drained on a were deleted once it was back.
    const kept = during.members.filter((m) => !m.deletionRequestedAt);
    const after = simulate(p, kept, { deleteAfter: 1, start: T0 + 3_600_000 + 1000 + 120_000 });
    expect(after.settled).toBe(true);
    const live = after.members.filter((m) => !m.deletionRequestedAt);
    expect(live.map((m) => m.spec.provider).sort()).toEqual(['a', 'a', 'b']);
    expect(after.minReady).toBeGreaterThanOrEqual(3);
  });

  it('failover within a tier first: an unhealthy tier-0 entry moves its share to the other tier-0 entry before tier 1', () => {
    const p = pool({
      replicas: 4,
      spread: [
        { provider: 'a', placement: {}, tier: 0 },
        { provider: 'b', placement: {}, tier: 0, maxReplicas: 3 },
        { provider: 'c', placement: {}, tier: 1 },
      ],
    });
    expect(desiredOf(planPool(input(p, [])))).toEqual([2, 2, 0]);
    const aDown: PlanInput['providerDown'] = (x) => (x === 'a' ? 'down' : undefined);
    expect(desiredOf(planPool(input(p, [], { providerDown: aDown })))).toEqual([0, 3, 1]);
  });

  it('QuotaExceeded on tier 0 (a static list with no free endpoint) overflows to tier 1 and keeps its serving member', () => {
    const p = tiered(3);
    const stuck = member(p, 'a', 'Provisioning');
    stuck.status.retry = { attempts: 1, notBefore: new Date(T0 + 60_000).toISOString(), reason: 'QuotaExceeded' };
    const plan = planPool(input(p, [member(p, 'a'), stuck]));
    expect(plan.entries[0]).toMatchObject({ available: false, reason: 'QuotaExceeded', tier: 0, maxReplicas: 2 });
    // The serving member on tier 0 stays (out of quota is not unhealthy); the rest overflow.
    expect(desiredOf(plan)).toEqual([1, 2]);
  });

  it('replicas beyond every cap: the members the caps allow, then halted (CapReached) instead of polling', () => {
    const p = pool({
      replicas: 5,
      spread: [
        { provider: 'a', placement: {}, maxReplicas: 2 },
        { provider: 'b', placement: {}, tier: 1, maxReplicas: 1 },
      ],
    });
    const first = planPool(input(p, []));
    expect(first.placed).toBe(3);
    expect(providers(first.creates)).toEqual(['a', 'a', 'b']);
    const full = planPool(
      input(
        p,
        ['a', 'a', 'b'].map((x) => member(p, x)),
      ),
    );
    expect(full).toMatchObject({ creates: [], drains: [], settled: false, halted: true, placed: 3 });
  });
});

describe('pool cost: maxCostPerHour caps the members placed', () => {
  // a costs $0.01 an hour a member, b (tier 1) $0.05.
  const price = (entry: { provider: string }) => (entry.provider === 'a' ? 0.01 : 0.05);

  it('within the budget: every member placed', () => {
    const plan = planPool(input(tiered(3, { maxCostPerHour: 0.07 }), [], { memberHourly: price }));
    expect(desiredOf(plan)).toEqual([2, 1]);
    expect(plan.overBudget).toBeUndefined();
  });

  it('above it: the overflow tier’s members are held back first, and the pool says what they would cost', () => {
    const plan = planPool(input(tiered(5, { maxCostPerHour: 0.1 }), [], { memberHourly: price }));
    expect(desiredOf(plan)).toEqual([2, 1]);
    expect(plan.placed).toBe(3);
    expect(plan.overBudget?.wantedPerHourUsd).toBeCloseTo(0.17, 10);
    expect(plan.overBudget?.placedPerHourUsd).toBeCloseTo(0.07, 10);
  });

  it('a lowered budget scales down: members above it drain, tier 1 first', () => {
    const p = tiered(4, { maxCostPerHour: 0.02 });
    const members = ['a', 'a', 'b', 'b'].map((x) => member(p, x));
    const plan = planPool(input(p, members, { memberHourly: price }));
    expect(desiredOf(plan)).toEqual([2, 0]);
    const drained = new Set(plan.drains.map((d) => d.name));
    expect(members.filter((m) => drained.has(m.metadata.name)).map((m) => m.spec.provider)).toEqual(['b', 'b']);
  });

  it('unpriced members cost nothing against it; without a price function it holds nothing back', () => {
    expect(desiredOf(planPool(input(tiered(3, { maxCostPerHour: 0.01 }), [], { memberHourly: () => 0 })))).toEqual([
      2, 1,
    ]);
    expect(desiredOf(planPool(input(tiered(3, { maxCostPerHour: 0.01 }), [])))).toEqual([2, 1]);
  });
});

/**
 * A simulated world, one reconcile a second: created members are Ready two steps later; drained
 * ones are deleted `deleteAfter` steps later (never while their provider is down). Runs until the
 * pool settles (at most 300 steps).
 */
function simulate(
  p: PoolDoc,
  initial: ProxyDoc[],
  opts: { deleteAfter: number; providerDown?: PlanInput['providerDown']; start?: number },
) {
  const providerDown = opts.providerDown ?? (() => undefined);
  let members = [...initial];
  const born = new Map<string, number>();
  const drainedAt = new Map<string, number>();
  let now = opts.start ?? T0 + 3_600_000 + 1000;
  let minReady = Infinity;
  let maxMembers = 0;
  let settled = false;
  for (let step = 0; step < 300 && !settled; step++) {
    for (const m of members) if ((born.get(m.metadata.name) ?? -9) <= step - 2) m.status.phase = 'Ready';
    members = members.filter((m) => {
      const at = drainedAt.get(m.metadata.name);
      return at === undefined || providerDown(m.spec.provider) !== undefined || step - at < opts.deleteAfter;
    });
    const plan = planPool(input(p, members, { now, providerDown }));
    p.status.entries = plan.entries;
    for (const d of plan.drains) {
      const m = members.find((x) => x.metadata.name === d.name);
      if (m) m.deletionRequestedAt = new Date(now).toISOString();
      drainedAt.set(d.name, step);
    }
    if (opts.deleteAfter === 0) members = members.filter((m) => !drainedAt.has(m.metadata.name));
    for (const c of plan.creates) {
      const m = member(p, c.entry.provider, 'Provisioning', now);
      born.set(m.metadata.name, step);
      members.push(m);
    }
    minReady = Math.min(minReady, members.filter((m) => m.status.phase === 'Ready' && !m.deletionRequestedAt).length);
    maxMembers = Math.max(maxMembers, members.length);
    now += 1000;
    settled = plan.settled;
  }
  return { members, minReady, maxMembers, settled };
}

describe('autoscaled pools: the wanted replicas are placed by tier, within the caps and the budget', () => {
  const price = (entry: { provider: string }) => (entry.provider === 'a' ? 0.01 : 0.05);
  const autoscaled = (extra: Partial<PoolSpec> = {}) => {
    const { replicas: _r, ...spec } = tiered(0, extra).spec;
    const autoscale = {
      minReplicas: 0,
      maxReplicas: 20,
      target: { inFlightPerMember: 4 },
      scaleUpStabilization: '0s',
      scaleDownAfter: '5m',
      scaleToZeroAfter: '10m',
    };
    return { ...tiered(0), spec: { ...spec, minAvailable: 0, autoscale } };
  };

  it('the decided replicas fill tier 0 up to its cap, then tier 1; maxCostPerHour holds tier 1 back first', () => {
    expect(desiredOf(planPool(input(autoscaled(), [], { replicas: 5 })))).toEqual([2, 3]);
    const limited = planPool(input(autoscaled({ maxCostPerHour: 0.1 }), [], { replicas: 5, memberHourly: price }));
    expect(desiredOf(limited)).toEqual([2, 1]);
    expect(limited.placed).toBe(3);
    expect(limited.overBudget?.wantedPerHourUsd).toBeCloseTo(0.17, 10);
  });

  it('at the budget with every placed member in: halted, not settled, nothing drained', () => {
    const p = autoscaled({ maxCostPerHour: 0.1 });
    const members = ['a', 'a', 'b'].map((x) => member(p, x));
    const plan = planPool(input(p, members, { replicas: 5, memberHourly: price }));
    expect(plan).toMatchObject({ creates: [], drains: [], settled: false, halted: true, placed: 3 });
  });

  it('scaling down to tier 0: a held tier-1 member stays and counts as settled, the free ones drain', () => {
    const p = autoscaled();
    const members = ['a', 'a', 'b', 'b'].map((x) => member(p, x));
    const held = new Set([members[2]!.metadata.name]);
    const plan = planPool(input(p, members, { replicas: 2, held }));
    expect(desiredOf(plan)).toEqual([2, 0]);
    expect(plan.drains).toEqual([{ name: members[3]!.metadata.name, reason: 'surplus' }]);
    const after = planPool(input(p, members.slice(0, 3), { replicas: 2, held }));
    expect(after).toMatchObject({ drains: [], creates: [], settled: true, halted: false });
  });
});
