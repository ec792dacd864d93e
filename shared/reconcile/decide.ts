/**
 * The reconcile decision: given desired state and an observation, what next? A pure function;
 * `decide.test.ts` has a table per MUST rule of the provider contract.
 */
import { banApplies } from '../domain/reports.js';
import type { ConditionType, Phase, ProxyStatus } from '../domain/status.js';
import type { ErrorInfo } from '../errors.js';
import type { Instance } from '../providers/contract.js';

/** What the provider said about the proxy's instance. */
export type Observation =
  | { kind: 'found'; instance: Instance }
  | { kind: 'notFound' }
  /** `get` failed: a permanent error, or a transient one (Retryable/QuotaExceeded). */
  | { kind: 'error'; error: ErrorInfo }
  /** `spec.provider` names no configured provider. */
  | { kind: 'providerMissing'; provider: string; message?: string }
  /** The provider-health monitor (or the relay's heartbeat) says the backend is down. */
  | { kind: 'providerDown'; message: string };

export interface Policy {
  /** Consecutive probe failures that make a Running instance be replaced. */
  unhealthyAfter: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** How soon to look again at an instance that is booting or being deleted. */
  pollMs: number;
}

export interface DecideInput {
  now: number;
  deleting: boolean;
  /** The desired spec hash over spec + resolved placement; undefined when placement is invalid. */
  desiredHash: string | undefined;
  /** Why the placement could not be resolved (names the field). */
  placementError?: ErrorInfo | undefined;
  maxAgeMs?: number | undefined;
  status: ProxyStatus;
  observation: Observation;
  policy: Policy;
  /** False when the provider's rollout budget is used up: drift and rotation wait. */
  replacementBudget: boolean;
  /**
   * A pool member (label `egress.dev/pool`): its pool replaces it (surging, within minAvailable)
   * when it is banned, due for rotation, stopped or unhealthy, so those are not done in place here.
   */
  pooled?: boolean | undefined;
}

export type Action = 'none' | 'create' | 'delete' | 'finalise';
/** Why an existing instance is being deleted while the proxy lives on. */
export type ReplaceReason = 'stopped' | 'drift' | 'rotation' | 'unhealthy' | 'failed' | 'banned';

type ConditionSet = Partial<
  Record<ConditionType, { status: 'True' | 'False' | 'Unknown'; reason: string; message: string }>
>;

export interface Decision {
  action: Action;
  phase: Phase;
  /** Human-readable reason, used for the event when the decision does something. */
  message: string;
  conditions: ConditionSet;
  replace?: ReplaceReason;
  /** Look again this soon (the check nacks so Pub/Sub redelivers with backoff). */
  recheckAfterMs?: number;
  /** A new asynchronous failure was seen: the status retry/failed fields to record. */
  failure?: { error: ErrorInfo; failedAt: number; specHash: string };
}

const cond = (status: 'True' | 'False' | 'Unknown', reason: string, message: string) => ({ status, reason, message });

/** Capped exponential backoff for the given attempt number (1-based). */
export function backoffMs(attempt: number, policy: Policy): number {
  return Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
}

/**
 * Decides the next step for one proxy.
 *
 * @example decide({ deleting: false, observation: { kind: 'notFound' }, ... }).action === 'create'
 */
export function decide(input: DecideInput): Decision {
  return input.deleting ? decideDeleting(input) : decideLiving(input);
}

function decideDeleting({ observation: o, status, policy }: DecideInput): Decision {
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
    case 'found':
      // Rule delete-idempotent: delete is idempotent and called again on every deletion poll.
      return deleting(`deleting instance ${o.instance.name} (${o.instance.state})`, 'delete');
    case 'error':
      // Rule unreadable-permanent: a permanent error from get while deleting → delete anyway.
      if (o.error.code === 'Permanent' || o.error.code === 'Validation') {
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
  const { observation: o, status, policy, now } = input;
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
  if (o.kind === 'error') {
    if (o.error.code === 'Permanent' || o.error.code === 'Validation') {
      const message = `cannot observe the instance: ${o.error.message}`;
      return { action: 'none', phase: 'Failed', message, conditions: failedConditions('PermanentError', message) };
    }
    return waiting(
      status.phase,
      'ObserveFailed',
      `cannot observe the instance: ${o.error.message}`,
      o.error.retryAfterMs ?? policy.pollMs,
    );
  }
  if (o.kind === 'notFound') return decideCreate(input, input.desiredHash);

  const instance = o.instance;
  if (instance.state === 'Failed') return decideFailedInstance(input, instance);
  if (instance.state === 'Pending') {
    return waiting('Provisioning', 'InstancePending', `instance ${instance.name} is starting`, policy.pollMs);
  }
  if ((instance.state === 'Stopped' || instance.state === 'Terminated') && input.pooled) {
    return poolReplaces(instance, `instance ${instance.name} is ${instance.state}; its pool replaces it`);
  }
  if (instance.state === 'Stopped' || instance.state === 'Terminated') {
    // Rule dead-is-stopped: Stopped and Terminated both lead to delete-and-recreate.
    return replace('stopped', `instance ${instance.name} is ${instance.state}; replacing it`, policy);
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
  if (instance.specHash !== input.desiredHash) {
    const message = `spec changed (instance ${instance.specHash}, desired ${input.desiredHash}); replacing`;
    if (input.replacementBudget) return replace('drift', message, policy);
    return ready(input, instance, 'spec changed; waiting for the provider rollout budget');
  }
  if (input.maxAgeMs !== undefined && instance.createdAt > 0 && age > input.maxAgeMs) {
    const message = `instance is older than maxAge (${Math.round(age / 1000)}s); rotating`;
    if (input.pooled)
      return ready(input, instance, 'older than maxAge; its pool replaces it once a new member is Ready');
    if (input.replacementBudget) return replace('rotation', message, policy);
    return ready(input, instance, 'due for rotation; waiting for the provider rollout budget');
  }
  const health = instance.health;
  if (health && health.consecutiveFailures >= policy.unhealthyAfter && input.pooled) {
    return poolReplaces(
      instance,
      `probe failed ${health.consecutiveFailures} times in a row (${health.error ?? 'no detail'}); its pool replaces it`,
    );
  }
  if (health && health.consecutiveFailures >= policy.unhealthyAfter) {
    return replace(
      'unhealthy',
      `probe failed ${health.consecutiveFailures} times in a row (${health.error ?? 'no detail'}); replacing`,
      policy,
    );
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
    return {
      action: 'none',
      phase: 'Unhealthy',
      message,
      conditions: {
        Provisioned: running(instance),
        Healthy: cond('False', 'ProbeFailed', message),
        Ready: cond('False', 'ProbeFailed', message),
      },
      recheckAfterMs: policy.pollMs,
    };
  }
  return ready(
    input,
    instance,
    banned ? 'reported banned (status.ban); left to its pool to replace' : 'proxy is ready',
  );
}

function decideCreate({ status, now, policy }: DecideInput, desiredHash: string): Decision {
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
    message: status.everCreated ? 'no instance; creating a new one' : 'creating the instance',
    conditions: {
      Provisioned: cond('False', 'Creating', 'creating the instance'),
      Ready: cond('False', 'Creating', 'creating the instance'),
    },
    recheckAfterMs: policy.pollMs,
  };
}

/** The backend reported that an asynchronous create failed: clean it up and back off or fail. */
function decideFailedInstance({ policy, status }: DecideInput, instance: Instance): Decision {
  const error = instance.error ?? { code: 'Retryable' as const, message: 'instance creation failed' };
  const isNew = (status.retry?.failedAt ?? 0) < instance.createdAt;
  const failure = isNew ? { error, failedAt: instance.createdAt, specHash: instance.specHash } : undefined;
  if (error.code === 'Permanent' || error.code === 'Validation') {
    return {
      action: 'delete',
      phase: 'Failed',
      message: error.message,
      conditions: failedConditions('PermanentError', error.message),
      replace: 'failed',
      ...(failure ? { failure } : {}),
    };
  }
  const reason = error.code === 'QuotaExceeded' ? 'QuotaExceeded' : 'CreateFailed';
  const attempts = (status.retry?.attempts ?? 0) + (isNew ? 1 : 0);
  return {
    action: 'delete',
    phase: 'Provisioning',
    message: `${error.message}; retrying with backoff`,
    conditions: { Provisioned: cond('False', reason, error.message), Ready: cond('False', reason, error.message) },
    replace: 'failed',
    recheckAfterMs: backoffMs(Math.max(1, attempts), policy),
    ...(failure ? { failure } : {}),
  };
}

function replace(why: ReplaceReason, message: string, policy: Policy): Decision {
  return {
    action: 'delete',
    phase: 'Replacing',
    message,
    replace: why,
    conditions: { Provisioned: cond('False', 'Replacing', message), Ready: cond('False', 'Replacing', message) },
    // Rule report-until-gone: the create waits until get says NotFound; look again soon.
    recheckAfterMs: policy.pollMs,
  };
}

function ready(_input: DecideInput, instance: Instance, message: string): Decision {
  return {
    action: 'none',
    phase: 'Ready',
    message,
    conditions: {
      Provisioned: running(instance),
      // No latency in the message: it changes every probe and would force a write per check.
      Healthy: cond('True', 'ProbeSucceeded', 'the last probe through the proxy succeeded'),
      Ready: cond('True', 'Ready', message),
    },
  };
}

/** A pool member that would be replaced in place: Unhealthy, left for its pool to surge past. */
function poolReplaces(instance: Instance, message: string): Decision {
  return {
    action: 'none',
    phase: 'Unhealthy',
    message,
    conditions: {
      Provisioned: running(instance),
      Healthy: cond('False', 'ProbeFailed', message),
      Ready: cond('False', 'PoolReplaces', message),
    },
  };
}

function running(instance: Instance) {
  return cond('True', 'Running', `instance ${instance.name} is running at ${instance.ip}:${instance.port}`);
}

function waiting(phase: Phase, reason: string, message: string, recheckAfterMs: number): Decision {
  return {
    action: 'none',
    phase,
    message,
    conditions: { Provisioned: cond('False', reason, message), Ready: cond('False', reason, message) },
    ...(recheckAfterMs > 0 ? { recheckAfterMs } : {}),
  };
}

function failedConditions(reason: string, message: string): ConditionSet {
  return { Provisioned: cond('False', reason, message), Ready: cond('False', reason, message) };
}

function conditionMessage(status: ProxyStatus, type: ConditionType): string | undefined {
  return status.conditions.find((c) => c.type === type)?.message;
}
