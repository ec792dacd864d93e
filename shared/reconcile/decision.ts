/**
 * The reconcile decision's vocabulary: what was observed, the policy, the decision, and the few
 * shapes a decision takes (`decide.ts` chooses among them).
 */
import type { ConditionType, Phase, ProxyStatus } from '../domain/status.js';
import type { ErrorInfo } from '../errors.js';
import type { Instance } from '../providers/contract.js';
import type { NeverReady } from './never-ready.js';

/** What the provider said about the proxy's instance. */
export type Observation =
  | { kind: 'found'; instance: Instance }
  | {
      kind: 'notFound';
      /** The provider's word for it, when it gave one (a relayed create resent, say). */ why?: string;
    }
  /** `get` failed: a permanent error, or a transient one (Retryable/QuotaExceeded). */
  | { kind: 'error'; error: ErrorInfo }
  /** `spec.provider` names no configured provider. */
  | { kind: 'providerMissing'; provider: string; message?: string }
  /** The provider-health monitor (or the relay's heartbeat) says the backend is down. */
  | { kind: 'providerDown'; message: string };

export interface Policy {
  /** Consecutive probe failures that make a Running instance be replaced. */
  unhealthyAfter: number;
  /** Instances in a row replaced without ever passing a probe after which creation stops. */
  neverReadyLimit: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
  /** How soon to look again at an instance that is booting or being deleted. */
  pollMs: number;
  /** How long a drained pool member keeps its instance before it is deleted (config `drainSeconds`). */
  drainMs: number;
}

export interface DecideInput {
  now: number;
  /** The proxy's generation: what a stop of creation (`status.unreachable`) holds for. */
  generation: number;
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
  /**
   * When deletion was requested (ms), set while the proxy is being deleted: a drained pool member
   * is deleted `policy.drainMs` after it.
   */
  deletionRequestedAt?: number | undefined;
}

export type Action = 'none' | 'create' | 'delete' | 'finalise';
/** Why an existing instance is being deleted while the proxy lives on. */
export type ReplaceReason = 'stopped' | 'drift' | 'rotation' | 'unhealthy' | 'failed' | 'banned';

export type ConditionSet = Partial<
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
  /** The instance being deleted never passed a probe: count it (`status.unreachable`). */
  neverReady?: NeverReady;
}

export const cond = (status: 'True' | 'False' | 'Unknown', reason: string, message: string) => ({
  status,
  reason,
  message,
});

/** Capped exponential backoff for the given attempt number (1-based). */
export function backoffMs(attempt: number, policy: Policy): number {
  return Math.min(policy.backoffMaxMs, policy.backoffBaseMs * 2 ** Math.max(0, attempt - 1));
}

/** Deletes the instance while the proxy lives on: a fresh one is created once it is gone. */
export function replace(why: ReplaceReason, message: string, policy: Policy): Decision {
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

/**
 * @param reason - of the Ready condition: `RolloutPending` when the proxy serves from an instance
 *   that is to be replaced (changed spec, or due for rotation) once the provider's rollout budget allows
 */
export function ready(instance: Instance, message: string, reason: 'Ready' | 'RolloutPending' = 'Ready'): Decision {
  return {
    action: 'none',
    phase: 'Ready',
    message,
    conditions: {
      Provisioned: running(instance),
      // No latency in the message: it changes every probe and would force a write per check.
      Healthy: cond('True', 'ProbeSucceeded', 'the last probe through the proxy succeeded'),
      Ready: cond('True', reason, message),
    },
  };
}

/** A pool member that would be replaced in place: Unhealthy, left for its pool to surge past. */
export function poolReplaces(instance: Instance, message: string): Decision {
  return unhealthy(instance, message, 'PoolReplaces');
}

/** A running instance whose probes fail: `Ready` False for `readyReason`. */
export function unhealthy(instance: Instance, message: string, readyReason: string): Decision {
  return {
    action: 'none',
    phase: 'Unhealthy',
    message,
    conditions: {
      Provisioned: running(instance),
      Healthy: cond('False', 'ProbeFailed', message),
      Ready: cond('False', readyReason, message),
    },
  };
}

export function running(instance: Instance) {
  return cond('True', 'Running', `instance ${instance.name} is running at ${instance.ip}:${instance.port}`);
}

export function waiting(phase: Phase, reason: string, message: string, recheckAfterMs: number): Decision {
  return {
    action: 'none',
    phase,
    message,
    conditions: failedConditions(reason, message),
    ...(recheckAfterMs > 0 ? { recheckAfterMs } : {}),
  };
}

/** `Provisioned` and `Ready` both False for `reason`. */
export function failedConditions(reason: string, message: string): ConditionSet {
  return { Provisioned: cond('False', reason, message), Ready: cond('False', reason, message) };
}

export function conditionMessage(status: ProxyStatus, type: ConditionType): string | undefined {
  return status.conditions.find((c) => c.type === type)?.message;
}
