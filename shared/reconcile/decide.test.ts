/** Table tests for the reconcile decision: one table per MUST rule of the provider contract. */
import { describe, expect, it } from 'vitest';
import type { ProxyStatus } from '../domain/status.js';
import type { Instance } from '../providers/contract.js';
import { decide, MAX_PENDING_RECHECK_MS } from './decide.js';
import { backoffMs, type DecideInput, type Observation } from './decision.js';
import { nextStatus, recordFailure, statusChanged } from './status.js';
import { TEST_POLICY } from './testing.js';

const NOW = Date.parse('2026-11-29T12:00:00Z');
const policy = TEST_POLICY;
const status = (over: Partial<ProxyStatus> = {}): ProxyStatus => ({
  phase: 'Pending',
  observedGeneration: 1,
  conditions: [],
  ...over,
});
const instance = (over: Partial<Instance> = {}): Instance => ({
  name: 'ep-a-1',
  proxy: 'a',
  installationId: 'test',
  specHash: 'h1',
  state: 'Running',
  ip: '127.0.0.1',
  port: 20000,
  createdAt: NOW - 60_000,
  health: { ok: true, consecutiveFailures: 0, lastProbeAt: new Date(NOW).toISOString(), latencyMs: 3 },
  ...over,
});
const found = (over: Partial<Instance> = {}): Observation => ({ kind: 'found', instance: instance(over) });
const input = (over: Partial<DecideInput> = {}): DecideInput => ({
  now: NOW,
  generation: 1,
  desiredHash: 'h1',
  status: status(),
  observation: { kind: 'notFound' },
  policy,
  replacementBudget: true,
  ...over,
});

type Row = [
  string,
  Partial<DecideInput>,
  { action: string; phase?: string; replace?: string; reason?: string; readyReason?: string },
];
function table(rows: Row[]) {
  it.each(rows)('%s', (_name, over, want) => {
    const d = decide(input(over));
    expect(d.action).toBe(want.action);
    if (want.phase) expect(d.phase).toBe(want.phase);
    if (want.replace) expect(d.replace).toBe(want.replace);
    if (want.reason) expect(d.conditions.Provisioned?.reason ?? d.conditions.Ready?.reason).toBe(want.reason);
    if (want.readyReason) expect(d.conditions.Ready?.reason).toBe(want.readyReason);
  });
}

describe('decide: deletion (rules unreadable-permanent and delete-idempotent)', () => {
  table([
    ['NotFound finalises', { deletionRequestedAt: NOW, observation: { kind: 'notFound' } }, { action: 'finalise' }],
    [
      'Found Running is deleted',
      { deletionRequestedAt: NOW, observation: found() },
      { action: 'delete', phase: 'Deleting' },
    ],
    [
      'a drained pool member serves out its drain before it is deleted',
      { pooled: true, deletionRequestedAt: NOW - 4000, observation: found() },
      { action: 'none', phase: 'Deleting' },
    ],
    [
      'a drained pool member is deleted once its drain is over',
      { pooled: true, deletionRequestedAt: NOW - 5000, observation: found() },
      { action: 'delete', phase: 'Deleting' },
    ],
    [
      'a drained pool member that is not running is deleted at once',
      { pooled: true, deletionRequestedAt: NOW, observation: found({ state: 'Stopped' }) },
      { action: 'delete', phase: 'Deleting' },
    ],
    [
      'a drain stamped by a clock further ahead than a second drain is not waited on',
      { pooled: true, deletionRequestedAt: NOW + 5001, observation: found() },
      { action: 'delete', phase: 'Deleting' },
    ],
    [
      'a standalone proxy is deleted at once',
      { deletionRequestedAt: NOW, observation: found() },
      { action: 'delete', phase: 'Deleting' },
    ],
    [
      'Found Terminated is deleted',
      { deletionRequestedAt: NOW, observation: found({ state: 'Terminated' }) },
      { action: 'delete', phase: 'Deleting' },
    ],
    [
      'Found Failed is deleted (owned volumes too)',
      { deletionRequestedAt: NOW, observation: found({ state: 'Failed' }) },
      { action: 'delete' },
    ],
    [
      'every deletion poll deletes again (idempotent)',
      { deletionRequestedAt: NOW, status: status({ phase: 'Deleting' }), observation: found() },
      { action: 'delete' },
    ],
    [
      'permanent get error: delete anyway (rule unreadable-permanent)',
      { deletionRequestedAt: NOW, observation: { kind: 'error', error: { code: 'Permanent', message: 'bad zone' } } },
      { action: 'delete' },
    ],
    [
      'transient get error: wait',
      { deletionRequestedAt: NOW, observation: { kind: 'error', error: { code: 'Retryable', message: 'timeout' } } },
      { action: 'none', phase: 'Deleting' },
    ],
    [
      'provider missing, never created: finalise',
      { deletionRequestedAt: NOW, observation: { kind: 'providerMissing', provider: 'x' } },
      { action: 'finalise' },
    ],
    [
      'provider missing, created before: wait',
      {
        deletionRequestedAt: NOW,
        status: status({ everCreated: true }),
        observation: { kind: 'providerMissing', provider: 'x' },
      },
      { action: 'none', phase: 'Deleting' },
    ],
    [
      'provider down: wait',
      { deletionRequestedAt: NOW, observation: { kind: 'providerDown', message: 'relay silent' } },
      { action: 'none', phase: 'Deleting' },
    ],
  ]);
});

describe('decide: replacement waits for NotFound (rule report-until-gone) and Stopped/Terminated replace (rule dead-is-stopped)', () => {
  table([
    [
      'Stopped → delete',
      { observation: found({ state: 'Stopped' }) },
      { action: 'delete', phase: 'Replacing', replace: 'stopped' },
    ],
    [
      'Terminated → delete',
      { observation: found({ state: 'Terminated' }) },
      { action: 'delete', phase: 'Replacing', replace: 'stopped' },
    ],
    [
      'still Stopped while replacing → delete again, no create',
      { status: status({ phase: 'Replacing' }), observation: found({ state: 'Stopped' }) },
      { action: 'delete' },
    ],
    [
      'NotFound after replacing → create',
      { status: status({ phase: 'Replacing', everCreated: true }), observation: { kind: 'notFound' } },
      { action: 'create', phase: 'Provisioning' },
    ],
    [
      'Pending → wait',
      { observation: found({ state: 'Pending', health: undefined }) },
      { action: 'none', phase: 'Provisioning' },
    ],
  ]);
  it('looks at a starting instance every pollMs at first, then less often as it waits (an eighth of its age, 20 s at most)', () => {
    const recheck = (ageMs: number) =>
      decide(input({ observation: found({ state: 'Pending', health: undefined, createdAt: NOW - ageMs }) }))
        .recheckAfterMs;
    expect(recheck(1000)).toBe(policy.pollMs);
    expect(recheck(16_000)).toBe(policy.pollMs);
    expect(recheck(40_000)).toBe(5000);
    expect(recheck(600_000)).toBe(MAX_PENDING_RECHECK_MS);
  });
  it('asks for a recheck while waiting for NotFound', () => {
    expect(decide(input({ observation: found({ state: 'Terminated' }) })).recheckAfterMs).toBe(policy.pollMs);
  });
  it('looks at a replacement or a deletion that goes on less often as it waits (an eighth of its age, 20 s at most)', () => {
    const since = (ageMs: number) => new Date(NOW - ageMs).toISOString();
    const replacing = (ageMs: number) =>
      status({
        phase: 'Replacing',
        conditions: [
          { type: 'Ready', status: 'False', reason: 'Replacing', message: '', lastTransitionTime: since(ageMs) },
        ],
      });
    const terminated = found({ state: 'Terminated' });
    const recheck = (over: Partial<DecideInput>) => decide(input(over)).recheckAfterMs;
    expect(recheck({ status: replacing(8000), observation: terminated })).toBe(policy.pollMs);
    expect(recheck({ status: replacing(80_000), observation: terminated })).toBe(10_000);
    // Not observable meanwhile (a relay's delete not applied yet): the same.
    const unobserved: Observation = {
      kind: 'error',
      error: { code: 'Retryable', message: 'delete not yet applied', retryAfterMs: policy.pollMs },
    };
    expect(recheck({ status: replacing(80_000), observation: unobserved })).toBe(10_000);
    const deleting = { status: status({ phase: 'Deleting' }), observation: terminated };
    expect(recheck({ ...deleting, deletionRequestedAt: NOW - 4000 })).toBe(policy.pollMs);
    expect(recheck({ ...deleting, deletionRequestedAt: NOW - 600_000 })).toBe(MAX_PENDING_RECHECK_MS);
    // The first look of a new step is as soon as ever.
    expect(recheck({ status: status({ phase: 'Ready' }), observation: terminated })).toBe(policy.pollMs);
  });
});

describe('decide: spec hash (resolved placement), maxAge rotation, probes', () => {
  table([
    [
      'hash differs → replace',
      { observation: found({ specHash: 'old' }) },
      { action: 'delete', replace: 'drift', phase: 'Replacing' },
    ],
    [
      'hash differs, budget used → keep serving, the rollout pending',
      { replacementBudget: false, observation: found({ specHash: 'old' }) },
      { action: 'none', phase: 'Ready', readyReason: 'RolloutPending' },
    ],
    [
      'older than maxAge → rotate',
      { maxAgeMs: 30_000, observation: found() },
      { action: 'delete', replace: 'rotation' },
    ],
    [
      'older than maxAge, budget used → keep serving, the rollout pending',
      { maxAgeMs: 30_000, replacementBudget: false, observation: found() },
      { action: 'none', phase: 'Ready', readyReason: 'RolloutPending' },
    ],
    [
      'younger than maxAge → ready',
      { maxAgeMs: 120_000, observation: found() },
      { action: 'none', phase: 'Ready', readyReason: 'Ready' },
    ],
    [
      'probe failed N times → replace',
      { observation: found({ health: { ok: false, consecutiveFailures: 3, lastProbeAt: '', error: '407' } }) },
      { action: 'delete', replace: 'unhealthy' },
    ],
    [
      'probe failed fewer than N → Unhealthy',
      { observation: found({ health: { ok: false, consecutiveFailures: 1, lastProbeAt: '' } }) },
      { action: 'none', phase: 'Unhealthy' },
    ],
    [
      'not probed yet → Provisioning',
      { observation: found({ health: undefined }) },
      { action: 'none', phase: 'Provisioning' },
    ],
    ['probe ok → Ready', { observation: found() }, { action: 'none', phase: 'Ready' }],
    [
      'invalid placement → Failed, no create',
      {
        desiredHash: undefined,
        placementError: {
          code: 'Validation',
          message: 'spec.placement.zone: unknown zone',
          field: 'spec.placement.zone',
        },
      },
      { action: 'none', phase: 'Failed', reason: 'PermanentError' },
    ],
  ]);
});

const ban = (at: number, over: Partial<NonNullable<ProxyStatus['ban']>> = {}): ProxyStatus['ban'] => ({
  at: new Date(at).toISOString(),
  reason: 'reported banned',
  targets: [],
  instanceCreatedAt: new Date(NOW - 60_000).toISOString(),
  egressIp: '127.1.0.7',
  ...over,
});

describe('decide: a ban replaces a lone proxy in place, once; a pool member is left to its pool', () => {
  table([
    [
      'banned instance → replace (banned)',
      { status: status({ phase: 'Ready', ban: ban(NOW - 1000) }), observation: found() },
      { action: 'delete', phase: 'Replacing', replace: 'banned', reason: 'Replacing' },
    ],
    [
      'banned for distinct targets → replace',
      {
        status: status({
          phase: 'Ready',
          ban: ban(NOW - 1000, { reason: 'banned by 3 targets', targets: ['a', 'b', 'c'] }),
        }),
        observation: found(),
      },
      { action: 'delete', replace: 'banned' },
    ],
    [
      'banned, the rollout budget used up → still replaced (a ban does not wait)',
      { replacementBudget: false, status: status({ phase: 'Ready', ban: ban(NOW - 1000) }), observation: found() },
      { action: 'delete', replace: 'banned' },
    ],
    [
      'banned instance still there while replacing → delete again, no create',
      { status: status({ phase: 'Replacing', ban: ban(NOW - 1000) }), observation: found() },
      { action: 'delete', replace: 'banned' },
    ],
    [
      'banned instance gone → create the fresh one',
      {
        status: status({ phase: 'Replacing', everCreated: true, ban: ban(NOW - 1000) }),
        observation: { kind: 'notFound' },
      },
      { action: 'create', phase: 'Provisioning' },
    ],
    [
      'the replacement (created after the ban) → not replaced again',
      { status: status({ phase: 'Ready', ban: ban(NOW - 120_000) }), observation: found({ createdAt: NOW - 60_000 }) },
      { action: 'none', phase: 'Ready' },
    ],
    [
      'the replacement still starting → wait, no delete',
      {
        status: status({ phase: 'Provisioning', ban: ban(NOW - 120_000) }),
        observation: found({ createdAt: NOW - 1000, state: 'Pending', health: undefined }),
      },
      { action: 'none', phase: 'Provisioning' },
    ],
    [
      'a pool member banned → left to the pool (Ready, no delete)',
      { pooled: true, status: status({ phase: 'Ready', ban: ban(NOW - 1000) }), observation: found() },
      { action: 'none', phase: 'Ready' },
    ],
    [
      'a pool member banned and dead → left to its pool as dead (Unhealthy), not replaced in place',
      {
        pooled: true,
        status: status({ phase: 'Ready', ban: ban(NOW - 1000) }),
        observation: found({ state: 'Terminated' }),
      },
      { action: 'none', phase: 'Unhealthy' },
    ],
  ]);
  it('says why in the message, with the targets', () => {
    const d = decide(
      input({
        status: status({
          ban: ban(NOW, { reason: 'banned by 2 targets within 60m', targets: ['a.example', 'b.example'] }),
        }),
        observation: found(),
      }),
    );
    expect(d.message).toMatch(/banned by 2 targets within 60m \(a\.example, b\.example\); replacing/);
  });
});

describe('decide: quota backs off, permanent does not retry (rule typed-errors)', () => {
  const retry = {
    attempts: 2,
    notBefore: new Date(NOW + 20_000).toISOString(),
    reason: 'QuotaExceeded',
    failedAt: NOW - 1000,
  };
  table([
    [
      'within backoff → wait',
      { status: status({ retry }) },
      { action: 'none', phase: 'Provisioning', reason: 'QuotaExceeded' },
    ],
    ['backoff elapsed → create', { now: NOW + 21_000, status: status({ retry }) }, { action: 'create' }],
    [
      'permanent for this spec → Failed, no create',
      { status: status({ failedSpecHash: 'h1' }) },
      { action: 'none', phase: 'Failed', reason: 'PermanentError' },
    ],
    ['permanent for an older spec → create', { status: status({ failedSpecHash: 'h0' }) }, { action: 'create' }],
    [
      'async create failed with quota → clean up and back off',
      { observation: found({ state: 'Failed', error: { code: 'QuotaExceeded', message: 'no ports left' } }) },
      { action: 'delete', phase: 'Provisioning', reason: 'QuotaExceeded' },
    ],
    [
      'async create failed permanently → Failed',
      {
        observation: found({
          state: 'Failed',
          error: { code: 'Permanent', message: 'bad', field: 'spec.placement.bindAddress' },
        }),
      },
      { action: 'delete', phase: 'Failed', reason: 'PermanentError' },
    ],
  ]);
  it('backoff is exponential and capped', () => {
    expect([1, 2, 3, 10].map((n) => backoffMs(n, policy))).toEqual([10_000, 20_000, 40_000, 600_000]);
  });
  it('a quota failure records attempts and notBefore; a permanent one records the spec hash', () => {
    const quota = recordFailure(status(), { code: 'QuotaExceeded', message: 'quota' }, NOW, NOW, policy, 'h1');
    expect(quota.retry).toMatchObject({
      attempts: 1,
      reason: 'QuotaExceeded',
      notBefore: new Date(NOW + 10_000).toISOString(),
    });
    const again = recordFailure(
      status({ retry: quota.retry }),
      { code: 'QuotaExceeded', message: 'quota' },
      NOW,
      NOW,
      policy,
      'h1',
    );
    expect(again.retry?.attempts).toBe(2);
    const permanent = recordFailure(
      status(),
      { code: 'Permanent', message: 'bad', field: 'spec.port' },
      NOW,
      NOW,
      policy,
      'h1',
    );
    expect(permanent).toMatchObject({ phase: 'Failed', failedSpecHash: 'h1' });
  });
});

describe('decide: a missing provider waits and recovers, never latches', () => {
  it('waits with ProviderNotConfigured, then creates once the provider exists', () => {
    const missing = decide(input({ observation: { kind: 'providerMissing', provider: 'later' } }));
    expect(missing).toMatchObject({ action: 'none', phase: 'Pending' });
    expect(missing.conditions.Provisioned?.reason).toBe('ProviderNotConfigured');
    const after = nextStatus(status(), missing, { kind: 'providerMissing', provider: 'later' }, 1, NOW, policy);
    expect(decide(input({ status: after, observation: { kind: 'notFound' } })).action).toBe('create');
  });
  it('a provider known down: no create and no delete', () => {
    for (const deletionRequestedAt of [undefined, NOW]) {
      const observation = { kind: 'providerDown', message: 'down' } as const;
      expect(decide(input({ deletionRequestedAt, observation })).action).toBe('none');
    }
  });
});

describe('status writes: one read and no write for a healthy unchanged proxy', () => {
  it('skips the write when only probe timing changed, writes when the heartbeat is due', () => {
    const d = decide(input({ observation: found() }));
    const first = nextStatus(status(), d, found(), 1, NOW, policy);
    const later = found({
      health: { ok: true, consecutiveFailures: 0, lastProbeAt: new Date(NOW + 5000).toISOString(), latencyMs: 9 },
    });
    const second = nextStatus(
      first,
      decide(input({ status: first, observation: later })),
      later,
      1,
      NOW + 5000,
      policy,
    );
    expect(statusChanged(first, second, NOW + 5000, 600_000)).toBe(false);
    expect(statusChanged(first, second, NOW + 5000, 1000)).toBe(true);
  });
  it('keeps lastTransitionTime when a condition keeps its status', () => {
    const d = decide(input({ observation: found() }));
    const first = nextStatus(status(), d, found(), 1, NOW, policy);
    const second = nextStatus(first, d, found(), 1, NOW + 9000, policy);
    expect(second.conditions.find((c) => c.type === 'Ready')?.lastTransitionTime).toBe(new Date(NOW).toISOString());
  });
});

describe('status after an asynchronous permanent failure', () => {
  it('records the failed instance’s spec hash so the same spec is not retried', () => {
    const o: Observation = found({
      state: 'Failed',
      specHash: 'h1',
      error: {
        code: 'Permanent',
        message: 'spec.placement.bindAddress: not allowed',
        field: 'spec.placement.bindAddress',
      },
    });
    const d = decide(input({ observation: o }));
    const s = nextStatus(status(), d, o, 1, NOW, policy);
    expect(s).toMatchObject({ phase: 'Failed', failedSpecHash: 'h1' });
    expect(decide(input({ status: s, observation: { kind: 'notFound' } })).action).toBe('none');
    expect(decide(input({ status: s, desiredHash: 'h2', observation: { kind: 'notFound' } })).action).toBe('create');
  });
});

describe('decide: pool members are replaced by their pool, not in place', () => {
  const failing = { ok: false, consecutiveFailures: 3, lastProbeAt: new Date(NOW).toISOString(), error: 'refused' };
  table([
    [
      'older than maxAge stays Ready (the pool surges past it)',
      { pooled: true, maxAgeMs: 30_000, observation: found() },
      { action: 'none', phase: 'Ready' },
    ],
    [
      'failing its probes is Unhealthy, not replaced',
      { pooled: true, observation: found({ health: failing }) },
      { action: 'none', phase: 'Unhealthy', reason: 'Running' },
    ],
    [
      'a stopped instance is Unhealthy, not replaced',
      { pooled: true, observation: found({ state: 'Stopped' }) },
      { action: 'none', phase: 'Unhealthy' },
    ],
    [
      'spec drift still rolls in place (a pool never changes a member spec; a catalogue edit does)',
      { pooled: true, observation: found({ specHash: 'old' }) },
      { action: 'delete', replace: 'drift' },
    ],
  ]);
  it('says why in the Ready condition (the pool reads PoolReplaces as dead)', () => {
    const d = decide(input({ pooled: true, observation: found({ health: failing }) }));
    expect(d.conditions.Ready?.reason).toBe('PoolReplaces');
  });
});
