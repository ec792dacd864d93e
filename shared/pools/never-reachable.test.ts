/** A pool whose members are never reachable: the plan stops creating on that entry, and applying the pool again resumes. */
import { describe, expect, it } from 'vitest';
import { POOL_LABEL, templateHash, type PoolApplyRequest } from '../domain/pool.js';
import { initialPoolStatus, type PoolDoc } from '../domain/pool-status.js';
import { initialStatus, type ProxyDoc } from '../domain/status.js';
import { poolApplyStep } from '../store/pool-rules.js';
import { planPool, TEMPLATE_LABEL, type Plan } from './plan.js';

const T0 = Date.parse('2026-12-06T00:00:00Z');
const LIMIT = 3;
const template = { metadata: { labels: {} }, spec: { provider: 'a', placement: {}, port: 0 } };
const pool = (): PoolDoc => ({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  metadata: { name: 'p', labels: {} },
  spec: { replicas: 1, maxSurge: 1, template, spread: [{ provider: 'a', placement: {} }] },
  generation: 1,
  requestTime: 100,
  createdAt: new Date(T0).toISOString(),
  status: initialPoolStatus(),
});

let serial = 0;
/** A member whose instance runs and fails its probes, never having passed one: left to its pool. */
function deadMember(p: PoolDoc, error = 'cannot reach proxy 10.0.0.9:3128: connect ETIMEDOUT'): ProxyDoc {
  serial++;
  const message = 'probe failed 3 times in a row (connect ETIMEDOUT); its pool replaces it';
  return {
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: { name: `p-m${serial}`, labels: { [POOL_LABEL]: 'p', [TEMPLATE_LABEL]: templateHash(p.spec.template) } },
    spec: { provider: 'a', placement: {}, port: 0 },
    generation: 1,
    requestTime: 0,
    createdAt: new Date(T0 + serial).toISOString(),
    status: {
      ...initialStatus(),
      phase: 'Unhealthy',
      conditions: [{ type: 'Ready', status: 'False', reason: 'PoolReplaces', message, lastTransitionTime: '' }],
      instance: { name: 'i', ip: '10.0.0.9', port: 3128, state: 'Running', createdAt: '', specHash: 'h' },
      health: { ok: false, error, consecutiveFailures: 3, lastProbeAt: '' },
    },
  };
}

/** One reconcile: plan, then do what it says (members created die unreachable; drained ones go). */
function reconcile(p: PoolDoc, members: ProxyDoc[], error?: string): { plan: Plan; members: ProxyDoc[] } {
  const plan = planPool({
    pool: p,
    members,
    providerDown: () => undefined,
    now: T0,
    recoverAfterMs: 60_000,
    unhealthyAfter: 3,
    neverReadyLimit: LIMIT,
  });
  p.status.entries = plan.entries;
  const drained = new Set(plan.drains.map((d) => d.name));
  return {
    plan,
    members: [...members.filter((m) => !drained.has(m.metadata.name)), ...plan.creates.map(() => deadMember(p, error))],
  };
}

describe('planPool: members never reachable', () => {
  it('members whose proxy answered (the echo endpoint down) are replaced as before, never counted', () => {
    const p = pool();
    let members: ProxyDoc[] = [];
    let created = 0;
    for (let round = 0; round < 12; round++) {
      let plan: Plan;
      ({ plan, members } = reconcile(p, members, 'proxy answered 502 to CONNECT'));
      created += plan.creates.length;
    }
    expect(created).toBeGreaterThan(LIMIT);
    expect(Object.values(p.status.entries ?? {}).some((e) => e.reason === 'NeverReachable')).toBe(false);
  });

  it('stop getting successors after neverReadyLimit; the last is drained; the pool halts', () => {
    const p = pool();
    let members: ProxyDoc[] = [];
    let created = 0;
    let plan: Plan | undefined;
    for (let round = 0; round < 12; round++) {
      ({ plan, members } = reconcile(p, members));
      created += plan.creates.length;
    }
    expect(created).toBe(LIMIT);
    expect(members).toEqual([]);
    const entry = p.status.entries[0];
    expect(entry).toMatchObject({ available: false, reason: 'NeverReachable' });
    expect(entry?.unreachable?.members).toHaveLength(LIMIT);
    expect(entry?.message).toContain(`${LIMIT} members on provider "a" in a row never passed a probe`);
    expect(plan).toMatchObject({ creates: [], drains: [], settled: false, halted: true });
  });

  it('a member seen again (a redelivered kick) counts once', () => {
    const p = pool();
    let { members } = reconcile(p, []);
    for (let i = 0; i < 5; i++)
      p.status.entries = planPool({
        pool: p,
        members: [...members],
        providerDown: () => undefined,
        now: T0,
        recoverAfterMs: 60_000,
        unhealthyAfter: 3,
        neverReadyLimit: LIMIT,
      }).entries;
    expect(p.status.entries[0]?.unreachable?.members).toHaveLength(1);
    ({ members } = reconcile(p, members));
    expect(members).toHaveLength(2); // the pool surged a successor; the dead one waits for it
    expect(p.status.entries[0]?.unreachable?.members).toHaveLength(1);
  });

  it('a member that passed a probe clears the count', () => {
    const p = pool();
    const { members } = reconcile(p, reconcile(p, []).members);
    expect(p.status.entries[0]?.unreachable?.members).toHaveLength(1);
    const reached = members.map((m) => ({
      ...m,
      status: { ...m.status, instance: { ...m.status.instance!, passedProbe: true } },
    }));
    reconcile(p, reached);
    expect(p.status.entries[0]?.unreachable).toBeUndefined();
  });

  it('applying the same pool again moves its generation, which resumes creation', () => {
    const p = pool();
    let members: ProxyDoc[] = [];
    for (let round = 0; round < 12; round++) ({ members } = reconcile(p, members));
    const request: PoolApplyRequest = {
      apiVersion: 'egress.dev/v1',
      kind: 'ProxyPool',
      action: 'apply',
      metadata: { name: 'p', labels: {} },
      spec: p.spec,
    };
    expect(poolApplyStep(p, 0, request, 200, T0)).toMatchObject({ outcome: 'updated', generation: 2 });
    expect(poolApplyStep(p, 0, request, 100, T0)).toEqual({ outcome: 'unchanged' });
    p.generation = 2;
    expect(reconcile(p, members).plan.creates).toHaveLength(1);
  });
});
