/**
 * The reconcile decision: given desired state and an observation, what next? A pure function;
 * `decide.test.ts` has a table per MUST rule of the provider contract.
 */
import { banApplies } from '../domain/reports.js';
import { creationStopped } from '../domain/status.js';
import type { Instance } from '../providers/contract.js';
import {
  backoffMs,
  cond,
  conditionMessage,
  failedConditions,
  poolReplaces,
  ready,
  replace,
  running,
  unhealthy,
  waiting,
  type Action,
  type DecideInput,
  type Decision,
} from './decision.js';
import { classifyFailure } from './failure.js';
import { neverReadyOf, stoppedMessage, triedWith, type NeverReady } from './never-ready.js';

/**
 * Decides the next step for one proxy.
 *
 * @example decide({ observation: { kind: 'notFound' }, ... }).action === 'create'
 */
export function decide(input: DecideInput): Decision {
  return lessOftenAsItAges(
    input,
    input.deletionRequestedAt !== undefined ? decideDeleting(input) : decideLiving(input),
  );
}

/**
 * A wait that goes on (still `Replacing` or `Deleting`, the instance not gone yet, or not
 * observable) is looked at again as a starting instance is: every eighth of its age, at most
 * {@link MAX_PENDING_RECHECK_MS}, instead of every `pollMs`. A relay-backed instance's change
 * asks for a check at once (its report kicks one), so the looks are only a backstop; polling
 * every proxy waiting on a relay with a queue minutes long every 2 s filled the `check` function
 * with looks that found nothing new (about 100 a second for 200 waiting proxies), ahead of the
 * kicks that had news.
 */
function lessOftenAsItAges(input: DecideInput, decision: Decision): Decision {
  const { status, policy, now } = input;
  const repeating = decision.action === 'delete' || input.observation.kind === 'error';
  if (!repeating || decision.recheckAfterMs !== policy.pollMs || decision.phase !== status.phase) return decision;
  const since =
    status.phase === 'Deleting'
      ? input.deletionRequestedAt
      : status.phase === 'Replacing'
        ? Date.parse(status.conditions.find((c) => c.type === 'Ready')?.lastTransitionTime ?? '')
        : undefined;
  if (since === undefined || !Number.isFinite(since)) return decision;
  return { ...decision, recheckAfterMs: pendingRecheckMs(now - since, policy.pollMs) };
}

function decideDeleting({ observation: o, status, policy, pooled, deletionRequestedAt, now }: DecideInput): Decision {
  const deleting = (message: string, action: Action, recheck = policy.pollMs): Decision => ({
    action,
    phase: 'Deleting',
    message,
    conditions: { Ready: cond('False', 'Deleting', message) },
    // 0 means "the next sweep": no redelivery loop while waiting on a provider.
    ...(recheck > 0 ? { recheckAfterMs: recheck } : {}),
  });
  switch (o.kind) {
    case 'notFound':
      return { action: 'finalise', phase: 'Deleting', message: 'instance is gone; removing the proxy', conditions: {} };
    case 'found': {
      // A drained pool member serves out its drain: gateways' lists drop it, requests through it end.
      // The request was stamped by another instance's clock: one further ahead than a second drain
      // is not waited on (a skewed clock must not keep an instance for its skew).
      const drainLeft = pooled && deletionRequestedAt !== undefined ? deletionRequestedAt + policy.drainMs - now : 0;
      if (drainLeft > 0 && drainLeft <= 2 * policy.drainMs && o.instance.state === 'Running')
        return deleting(
          `draining: instance ${o.instance.name} is deleted in ${Math.ceil(drainLeft / 1000)}s, once gateways' lists have dropped it`,
          'none',
          drainLeft,
        );
      // Rule delete-idempotent: delete is idempotent and called again on every deletion poll.
      return deleting(`deleting instance ${o.instance.name} (${o.instance.state})`, 'delete');
    }
    case 'error':
      // Rule unreadable-permanent: a permanent error from get while deleting → delete anyway.
      if (classifyFailure(o.error).permanent) {
        return deleting(`cannot observe the instance (${o.error.message}); deleting anyway`, 'delete');
      }
      return deleting(
        `waiting to observe the instance: ${o.error.message}`,
        'none',
        o.error.retryAfterMs ?? policy.pollMs,
      );
    case 'providerMissing':
      if (!status.everCreated) {
        return {
          action: 'finalise',
          phase: 'Deleting',
          message: 'no instance was ever created; removing the proxy',
          conditions: {},
        };
      }
      return deleting(
        `provider "${o.provider}" is not configured; the instance may still exist, waiting for it to be configured`,
        'none',
        0,
      );
    case 'providerDown':
      return deleting(`provider is down (${o.message}); deletion waits`, 'none', 0);
  }
}

function decideLiving(input: DecideInput): Decision {
  const { observation: o, status, policy } = input;
  if (o.kind === 'providerMissing') {
    const message = `${o.message ?? `provider "${o.provider}" is not configured`}; waiting for it (re-checked every sweep)`;
    return waiting('Pending', 'ProviderNotConfigured', message, 0);
  }
  if (o.kind === 'providerDown') {
    const message = `provider is down: ${o.message}; no changes until it recovers`;
    return {
      action: 'none',
      phase: status.phase,
      message,
      conditions: { Provisioned: cond('Unknown', 'ProviderDown', message) },
    };
  }
  if (input.desiredHash === undefined) {
    const message = input.placementError?.message ?? 'placement is invalid';
    return { action: 'none', phase: 'Failed', message, conditions: failedConditions('PermanentError', message) };
  }
  if (creationStopped(status, input.generation)) return decideStopped(input);
  if (o.kind === 'error') {
    const message = `cannot observe the instance: ${o.error.message}`;
    if (classifyFailure(o.error).permanent) {
      return { action: 'none', phase: 'Failed', message, conditions: failedConditions('PermanentError', message) };
    }
    return waiting(status.phase, 'ObserveFailed', message, o.error.retryAfterMs ?? policy.pollMs);
  }
  if (o.kind === 'notFound') return decideCreate(input, input.desiredHash, o.why);
  return decideFound(input, input.desiredHash, o.instance);
}

/** An instance exists: wait for it, replace it (or leave that to its pool), or judge its health. */
function decideFound(input: DecideInput, desiredHash: string, instance: Instance): Decision {
  const { status, policy, now } = input;
  if (instance.state === 'Failed') return decideFailedInstance(input, instance);
  if (instance.state === 'Pending') {
    const recheck = pendingRecheckMs(now - instance.createdAt, policy.pollMs);
    return waiting('Provisioning', 'InstancePending', `instance ${instance.name} is starting`, recheck);
  }
  if ((instance.state === 'Stopped' || instance.state === 'Terminated') && input.pooled) {
    return poolReplaces(instance, `instance ${instance.name} is ${instance.state}; its pool replaces it`);
  }
  if (instance.state === 'Stopped' || instance.state === 'Terminated') {
    // Rule dead-is-stopped: Stopped and Terminated both lead to delete-and-recreate.
    return replaceCounted(input, instance, 'stopped', `instance ${instance.name} is ${instance.state}`);
  }
  const ban = status.ban;
  const banned = banApplies(ban, instance.createdAt);
  // A lone proxy is replaced in place (same name, a fresh instance). A pool member is not: its pool
  // surges a replacement first (minAvailable) and then drains and deletes this one.
  if (banned && ban && !input.pooled) {
    const targets = ban.targets.length > 0 ? ` (${ban.targets.join(', ')})` : '';
    return replace('banned', `${ban.reason}${targets}; replacing it with a fresh instance`, policy);
  }
  const age = now - instance.createdAt;
  if (instance.specHash !== desiredHash) {
    const message = `spec changed (instance ${instance.specHash}, desired ${desiredHash}); replacing`;
    if (input.replacementBudget) return replace('drift', message, policy);
    return ready(instance, 'spec changed; waiting for the provider rollout budget', 'RolloutPending');
  }
  if (input.maxAgeMs !== undefined && instance.createdAt > 0 && age > input.maxAgeMs) {
    const message = `instance is older than maxAge (${Math.round(age / 1000)}s); rotating`;
    if (input.pooled) return ready(instance, 'older than maxAge; its pool replaces it once a new member is Ready');
    if (input.replacementBudget) return replace('rotation', message, policy);
    return ready(instance, 'due for rotation; waiting for the provider rollout budget', 'RolloutPending');
  }
  return decideHealth(input, instance, banned);
}

/** A current Running instance: its probes say Ready, Unhealthy, or replace it. */
function decideHealth(input: DecideInput, instance: Instance, banned: boolean): Decision {
  const { policy, pooled } = input;
  const health = instance.health;
  if (health && health.consecutiveFailures >= policy.unhealthyAfter) {
    const failures = `probe failed ${health.consecutiveFailures} times in a row (${health.error ?? 'no detail'})`;
    if (pooled) return poolReplaces(instance, `${failures}; its pool replaces it`);
    return replaceCounted(input, instance, 'unhealthy', failures);
  }
  if (!health) {
    return {
      action: 'none',
      phase: 'Provisioning',
      message: 'instance is running; waiting for the first probe',
      conditions: {
        Provisioned: running(instance),
        Healthy: cond('Unknown', 'NotProbed', 'waiting for the first probe'),
        Ready: cond('False', 'NotProbed', 'waiting for the first probe'),
      },
      recheckAfterMs: policy.pollMs,
    };
  }
  if (!health.ok) {
    const message = `probe failed ${health.consecutiveFailures}/${policy.unhealthyAfter}: ${health.error ?? 'no detail'}`;
    return { ...unhealthy(instance, message, 'ProbeFailed'), recheckAfterMs: policy.pollMs };
  }
  return ready(instance, banned ? 'reported banned (status.ban); left to its pool to replace' : 'proxy is ready');
}

/** The longest wait between two looks at a starting instance (the sweep is the backstop of a lost one). */
export const MAX_PENDING_RECHECK_MS = 20_000;

/**
 * When to look again at an instance that is still starting, `ageMs` after it was asked for: every
 * `pollMs` at first, then an eighth of its age, at most {@link MAX_PENDING_RECHECK_MS}. Creates
 * queued behind hundreds of others on a relay would otherwise be looked at every `pollMs` each,
 * most of the control plane's work while the relay works through its queue; an instance that
 * turns Running is seen at once anyway when its backend reports (a relay's report kicks a check),
 * and a VM that boots in 40 s is seen at most 5 s late.
 */
export function pendingRecheckMs(ageMs: number, pollMs: number): number {
  return Math.round(Math.min(MAX_PENDING_RECHECK_MS, Math.max(pollMs, ageMs / 8)));
}

/**
 * Replaces a dead or unreachable instance; one that never passed a probe is counted, and the one
 * that reaches `neverReadyLimit` is deleted without a successor (`status.unreachable`).
 */
function replaceCounted(input: DecideInput, instance: Instance, why: 'stopped' | 'unhealthy', what: string): Decision {
  const { status, generation, policy } = input;
  // Stopped while the stored phase is Deleting: stopped by that delete, and the proxy was applied
  // again before it was gone (delete then apply, as churn does). Counted, three such rounds stopped
  // creation for good with a proxy nobody failed to reach.
  const stoppedByOurDelete = why === 'stopped' && status.phase === 'Deleting';
  const never = stoppedByOurDelete ? undefined : neverReadyOf(status, generation, instance, policy.neverReadyLimit);
  if (!never) return replace(why, `${what}; replacing`, policy);
  const tried = triedWith(status.unreachable, generation, never);
  if (never.stop) return stopCreating(never, stoppedMessage(never, tried), policy);
  const count = `${tried}/${policy.neverReadyLimit} instances in a row never reachable`;
  return { ...replace(why, `${what}; replacing (${count})`, policy), neverReady: never };
}

/** The last unreachable instance is deleted and no other is created: phase Failed, `NeverReachable`. */
function stopCreating(never: NeverReady | undefined, message: string, policy: DecideInput['policy']): Decision {
  return {
    action: 'delete',
    phase: 'Failed',
    message,
    conditions: failedConditions('NeverReachable', message),
    recheckAfterMs: policy.pollMs,
    ...(never ? { neverReady: never } : {}),
  };
}

/** Creation stopped for this generation: delete what is left, create nothing, until the proxy is applied again. */
function decideStopped({ observation: o, status, policy }: DecideInput): Decision {
  const record = status.unreachable ?? { address: '', error: 'unknown', instances: [] };
  const message = stoppedMessage(record, record.instances.length);
  if (o.kind === 'found') return stopCreating(undefined, message, policy);
  const failed: Decision = {
    action: 'none',
    phase: 'Failed',
    message,
    conditions: failedConditions('NeverReachable', message),
  };
  // An instance that could not be observed may still be there (and billed): look again.
  return o.kind === 'error' ? { ...failed, recheckAfterMs: o.error.retryAfterMs ?? policy.pollMs } : failed;
}

function decideCreate({ status, now, policy }: DecideInput, desiredHash: string, why?: string): Decision {
  if (status.failedSpecHash === desiredHash) {
    const message = conditionMessage(status, 'Provisioned') ?? 'a permanent error was reported for this spec';
    return { action: 'none', phase: 'Failed', message, conditions: failedConditions('PermanentError', message) };
  }
  const notBefore = status.retry ? Date.parse(status.retry.notBefore) : 0;
  if (notBefore > now) {
    const reason = status.retry?.reason ?? 'Backoff';
    return waiting(
      'Provisioning',
      reason,
      `${conditionMessage(status, 'Provisioned') ?? reason}; retrying after ${status.retry?.notBefore}`,
      notBefore - now,
    );
  }
  return {
    action: 'create',
    phase: 'Provisioning',
    message: status.everCreated ? `no instance (${why ?? 'not found'}); creating a new one` : 'creating the instance',
    conditions: failedConditions('Creating', 'creating the instance'),
    recheckAfterMs: policy.pollMs,
  };
}

/** The backend reported that an asynchronous create failed: clean it up and back off or fail. */
function decideFailedInstance({ policy, status }: DecideInput, instance: Instance): Decision {
  const error = instance.error ?? { code: 'Retryable' as const, message: 'instance creation failed' };
  const failure = classifyFailure(error);
  const isNew = (status.retry?.failedAt ?? 0) < instance.createdAt;
  const recorded = isNew ? { failure: { error, failedAt: instance.createdAt, specHash: instance.specHash } } : {};
  const conditions = failedConditions(failure.reason, error.message);
  if (failure.permanent) {
    return {
      action: 'delete',
      phase: failure.phase,
      message: error.message,
      conditions,
      replace: 'failed',
      ...recorded,
    };
  }
  const attempts = (status.retry?.attempts ?? 0) + (isNew ? 1 : 0);
  return {
    action: 'delete',
    phase: failure.phase,
    message: `${error.message}; retrying with backoff`,
    conditions,
    replace: 'failed',
    recheckAfterMs: backoffMs(Math.max(1, attempts), policy),
    ...recorded,
  };
}
