/** A proxy that is never reachable: decide and nextStatus across its instances, and the apply that resumes it. */
import { describe, expect, it } from 'vitest';
import type { ApplyRequest } from '../domain/proxy.js';
import { initialStatus, type ProxyDoc, type ProxyStatus } from '../domain/status.js';
import type { Instance } from '../providers/contract.js';
import { applyStep } from '../store/proxy-rules.js';
import { decide } from './decide.js';
import type { DecideInput, Decision, Observation } from './decision.js';
import { nextStatus } from './status.js';
import { TEST_POLICY } from './testing.js';

const T0 = Date.parse('2026-12-06T12:00:00Z');
const policy = TEST_POLICY;
const refused = {
  ok: false,
  consecutiveFailures: 3,
  lastProbeAt: new Date(T0).toISOString(),
  error: 'cannot reach proxy 10.0.0.7:3128: connect ETIMEDOUT',
};

/** The k-th instance of proxy `a` (each has its own createdAt: that is what tells instances apart). */
const instance = (k: number, over: Partial<Instance> = {}): Instance => ({
  name: 'ep-a-1',
  proxy: 'a',
  installationId: 'test',
  specHash: 'h1',
  state: 'Running',
  ip: '10.0.0.7',
  port: 3128,
  createdAt: T0 + k * 60_000,
  health: refused,
  ...over,
});

/** One reconcile of generation `generation`: the decision and the status it leaves. */
function step(status: ProxyStatus, observation: Observation, generation = 1): { d: Decision; status: ProxyStatus } {
  const input: DecideInput = {
    now: T0 + 3_600_000,
    generation,
    desiredHash: 'h1',
    status,
    observation,
    policy,
    replacementBudget: true,
  };
  const d = decide(input);
  return { d, status: nextStatus(status, d, observation, generation, input.now, policy) };
}

/** Runs instances 1..n through create → unreachable → delete; returns the status and the creates made. */
function unreachableInstances(n: number, from: ProxyStatus = initialStatus(), generation = 1, health = refused) {
  let status = from;
  let creates = 0;
  const decisions: Decision[] = [];
  for (let k = 1; k <= n; k++) {
    const created = step(status, { kind: 'notFound' }, generation);
    decisions.push(created.d);
    status = created.status;
    if (created.d.action !== 'create') break;
    creates++;
    const seen = step(
      status,
      { kind: 'found', instance: instance(k + (generation - 1) * 100, { health }) },
      generation,
    );
    decisions.push(seen.d);
    status = seen.status;
  }
  return { status, creates, decisions };
}

describe('decide: a proxy never reachable is not replaced forever (neverReadyLimit)', () => {
  it('creates neverReadyLimit instances, deletes the last, and creates no more', () => {
    const { status, creates, decisions } = unreachableInstances(5);
    expect(creates).toBe(3);
    const last = decisions.at(-2);
    expect(last).toMatchObject({ action: 'delete', phase: 'Failed' });
    expect(last?.replace).toBeUndefined();
    expect(decisions.at(-1)).toMatchObject({ action: 'none', phase: 'Failed' });
    expect(status.phase).toBe('Failed');
    expect(status.unreachable).toMatchObject({ generation: 1, stopped: true, address: '10.0.0.7:3128' });
    expect(status.unreachable?.instances).toHaveLength(3);
    const ready = status.conditions.find((c) => c.type === 'Ready');
    expect(ready?.reason).toBe('NeverReachable');
    for (const words of ['10.0.0.7:3128', 'connect ETIMEDOUT', '3 instances', 'firewall', 'cloud-init', 'apply'])
      expect(ready?.message).toContain(words);
  });

  it('names the address the prober used: the VPC one (probeIp) where there is one', () => {
    let status = initialStatus();
    for (let k = 1; k <= 3; k++) {
      status = step(status, { kind: 'notFound' }).status;
      status = step(status, {
        kind: 'found',
        instance: instance(k, { ip: '203.0.113.9', probeIp: '10.0.0.7' }),
      }).status;
    }
    expect(status.unreachable).toMatchObject({ stopped: true, address: '10.0.0.7:3128' });
  });

  it('counts only a proxy nobody could connect to: failures behind one that answered (echo down, 407) are replaced as before', () => {
    for (const error of ['proxy answered 502 to CONNECT', 'timed out after 3000 ms', 'proxy answered 407 to CONNECT']) {
      const { creates, status } = unreachableInstances(5, initialStatus(), 1, { ...refused, error });
      expect(creates, error).toBe(5);
      expect(status.unreachable, error).toBeUndefined();
      expect(status.phase, error).not.toBe('Failed');
    }
  });

  it('the replacements before the limit say how many were tried', () => {
    const { decisions } = unreachableInstances(2);
    expect(decisions[1]).toMatchObject({ action: 'delete', replace: 'unhealthy' });
    expect(decisions[1]?.message).toContain('1/3 instances in a row never reachable');
    expect(decisions[3]?.message).toContain('2/3');
  });

  it('a redelivered check of one instance counts it once', () => {
    const { status } = unreachableInstances(2);
    let again = status;
    for (let i = 0; i < 4; i++) again = step(again, { kind: 'found', instance: instance(2) }).status;
    expect(again.unreachable?.instances).toHaveLength(2);
    expect(again.unreachable?.stopped).toBe(false);
    expect(step(again, { kind: 'notFound' }).d.action).toBe('create');
  });

  it('while stopped, an instance still found is deleted again; an unobservable one is looked at again', () => {
    const { status } = unreachableInstances(3);
    expect(step(status, { kind: 'found', instance: instance(3) }).d).toMatchObject({
      action: 'delete',
      phase: 'Failed',
    });
    const error = step(status, { kind: 'error', error: { code: 'Retryable', message: 'timeout' } }).d;
    expect(error).toMatchObject({ action: 'none', phase: 'Failed', recheckAfterMs: policy.pollMs });
  });

  it('an instance that passed a probe once is not counted, and a Ready one clears the count', () => {
    let { status } = unreachableInstances(2);
    status = step(status, { kind: 'notFound' }).status;
    const ok = { ...refused, ok: true, consecutiveFailures: 0 };
    const readied = step(status, { kind: 'found', instance: instance(3, { health: ok }) });
    expect(readied.d.phase).toBe('Ready');
    expect(readied.status.unreachable).toBeUndefined();
    expect(readied.status.instance?.passedProbe).toBe(true);
    const failing = step(readied.status, { kind: 'found', instance: instance(3) });
    expect(failing.d).toMatchObject({ action: 'delete', replace: 'unhealthy' });
    expect(failing.status.unreachable).toBeUndefined();
  });

  it('a Stopped instance that never passed a probe counts too', () => {
    const stopped = step(initialStatus(), {
      kind: 'found',
      instance: instance(1, { state: 'Stopped', health: undefined }),
    });
    expect(stopped.d).toMatchObject({ action: 'delete', replace: 'stopped' });
    expect(stopped.status.unreachable?.error).toBe('instance was Stopped before passing a probe');
  });

  it('an instance stopped by a delete, then applied again before it was gone, is not counted', () => {
    const deleting: ProxyStatus = { ...initialStatus(), phase: 'Deleting' };
    const applied = step(deleting, {
      kind: 'found',
      instance: instance(1, { state: 'Terminated', health: undefined }),
    });
    expect(applied.d).toMatchObject({ action: 'delete', replace: 'stopped' });
    expect(applied.d.neverReady).toBeUndefined();
    expect(applied.status.unreachable).toBeUndefined();
  });

  it('a new generation resumes creation with a fresh count', () => {
    const { status } = unreachableInstances(3);
    const resumed = step(status, { kind: 'notFound' }, 2);
    expect(resumed.d.action).toBe('create');
    expect(resumed.status.unreachable).toBeUndefined();
    expect(unreachableInstances(5, status, 2).creates).toBe(3);
  });

  it('the last instance of the stopped generation, still being deleted when the spec is applied again, is not counted for the new one', () => {
    // The relay's report that the deletion is done can come a second or more after the apply: the
    // instance is still found (Terminated) by the new generation's first checks.
    const { status } = unreachableInstances(3);
    const leaving = instance(3, { state: 'Terminated', health: undefined });
    let resumed = step(status, { kind: 'found', instance: leaving }, 2);
    expect(resumed.d.neverReady).toBeUndefined();
    // A failed look in between (the relay's inventory unreadable) keeps what was counted.
    resumed = step(resumed.status, { kind: 'error', error: { code: 'Retryable', message: 'timeout' } }, 2);
    expect(resumed.status.unreachable).toMatchObject({ generation: 1 });
    resumed = step(resumed.status, { kind: 'found', instance: leaving }, 2);
    expect(resumed.d.neverReady).toBeUndefined();
    // Nothing counted for generation 2: the record is generation 1's, kept until its instance is gone.
    expect(resumed.status.unreachable).toMatchObject({ generation: 1, stopped: true });
    const gone = step(resumed.status, { kind: 'notFound' }, 2);
    expect(gone.d.action).toBe('create');
    expect(gone.status.unreachable).toBeUndefined();
    expect(unreachableInstances(5, resumed.status, 2).creates).toBe(3);
  });
});

describe('apply: the same spec applied again to a stopped proxy is the retry', () => {
  const request: ApplyRequest = {
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    action: 'apply',
    metadata: { name: 'a', labels: {} },
    spec: { provider: 'gcp', placement: {}, port: 0 },
  };
  const doc = (status: ProxyStatus): ProxyDoc => ({
    apiVersion: 'egress.dev/v1',
    kind: 'Proxy',
    metadata: { name: 'a', labels: {} },
    spec: request.spec,
    generation: 1,
    requestTime: 100,
    createdAt: new Date(T0).toISOString(),
    status,
  });

  it('moves the generation once; its redelivery and a healthy proxy move nothing', () => {
    const stopped = doc(unreachableInstances(3).status);
    expect(applyStep(stopped, 0, request, 200, T0)).toMatchObject({ outcome: 'updated', patch: { generation: 2 } });
    expect(applyStep(stopped, 0, request, 100, T0)).toEqual({ outcome: 'unchanged' });
    expect(applyStep(stopped, 0, request, 50, T0)).toEqual({ outcome: 'stale' });
    const retried = { ...stopped, generation: 2, requestTime: 200 };
    expect(applyStep(retried, 0, request, 200, T0)).toEqual({ outcome: 'unchanged' });
    expect(applyStep(doc(initialStatus()), 0, request, 200, T0)).toEqual({ outcome: 'unchanged', requestTime: 200 });
  });
});
