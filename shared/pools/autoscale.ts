/**
 * The autoscaler's decision: how many members a pool with `spec.autoscale` wants, from the live
 * gateways' demand. A pure function (autoscale.test.ts); the pool reconcile runs it inside its
 * transaction and plans the members for its answer.
 *
 * It follows the Kubernetes HorizontalPodAutoscaler's algorithm
 * (https://kubernetes.io/docs/tasks/run-application/horizontal-pod-autoscale/#algorithm-details):
 * `desired = ceil(current × metric / target)` over the Ready members, unchanged within a tolerance
 * of 0.1, clamped to [min, max]; and its stabilisation windows (`behavior.scaleUp/scaleDown
 * .stabilizationWindowSeconds`): a scale-up goes to the lowest recommendation of the up window, a
 * scale-down to the highest of the down window, so a noisy minute does not churn instances. Two
 * things an HPA has not: scale from zero (a waiting request wants at least one member, at once)
 * and `scaleToZeroAfter` (the last member goes only after that long without any demand).
 */
import type { Autoscale, PoolDemand } from '../domain/autoscale.js';
import { parseDuration } from '../domain/duration.js';
import type { PoolStatus } from '../domain/pool-status.js';

/** The HPA's default tolerance: a ratio within 10 % of the target changes nothing. */
export const TOLERANCE = 0.1;
/** Recommendations kept for the windows (at a 5 s interval, 10 minutes' worth). */
const MAX_RECOMMENDATIONS = 120;

export type AutoscaleState = NonNullable<PoolStatus['autoscale']>;

export interface AutoscaleInput {
  autoscale: Autoscale;
  /** The live gateways' demand, summed. */
  demand: PoolDemand;
  /** Members serving now (Ready, not draining): the HPA's ready pod count. */
  ready: number;
  /** What the pool wanted before this decision (status.desiredReplicas); none for a new pool. */
  previous: number | undefined;
  state: AutoscaleState | undefined;
  now: number;
}

export interface AutoscaleDecision {
  desired: number;
  /** The proportional recommendation, clamped, before the windows. */
  recommendation: number;
  /** How the decision was reached, with its inputs: the message of the pool's event. */
  reason: 'ScaledUp' | 'ScaledDown' | 'Woken' | 'ScaledToZero' | 'Held' | 'Steady';
  message: string;
  state: AutoscaleState;
}

const ms = (text: string) => parseDuration(text) ?? 0;

/** The demand the target is measured against: in-flight (waiting included) or started per second. */
function metricOf(a: Autoscale, d: PoolDemand): { value: number; target: number; name: string } {
  if (a.target.inFlightPerMember !== undefined)
    return { value: d.inFlight + d.waiting, target: a.target.inFlightPerMember, name: 'inFlightPerMember' };
  return {
    value: d.startedPerSecond,
    target: a.target.requestsPerSecondPerMember ?? 1,
    name: 'requestsPerSecondPerMember',
  };
}

/** Whether any gateway sees the pool used at all. */
export const hasDemand = (d: PoolDemand) => d.inFlight > 0 || d.waiting > 0 || d.startedPerSecond > 0;

/** The pool's members for its demand now; see the module comment for the rules. */
export function decideReplicas(input: AutoscaleInput): AutoscaleDecision {
  const { autoscale: a, demand, ready, now } = input;
  const metric = metricOf(a, demand);
  const busy = hasDemand(demand);
  const lastDemandAt = busy ? now : input.state?.lastDemandAt;
  const previous = input.previous ?? a.minReplicas;

  let raw: number;
  if (ready > 0) {
    const ratio = metric.value / ready / metric.target;
    raw = Math.abs(ratio - 1) <= TOLERANCE ? ready : Math.ceil(ratio * ready);
  } else raw = Math.ceil(metric.value / metric.target);
  // Used at all: at least one member. Unused: one member stays until scaleToZeroAfter has passed.
  const idleLongEnough = lastDemandAt === undefined || now - lastDemandAt >= ms(a.scaleToZeroAfter);
  if (busy || (previous > 0 && !idleLongEnough)) raw = Math.max(raw, 1);
  const recommendation = Math.min(a.maxReplicas, Math.max(a.minReplicas, raw));

  const horizon = Math.max(ms(a.scaleUpStabilization), ms(a.scaleDownAfter));
  const kept = (input.state?.recommendations ?? []).filter((r) => now - r.at < horizon);
  const recommendations = [...kept, { at: now, replicas: recommendation }].slice(-MAX_RECOMMENDATIONS);
  const within = (windowMs: number) => recommendations.filter((r) => now - r.at <= windowMs).map((r) => r.replicas);
  const upLimit = Math.min(...within(ms(a.scaleUpStabilization)));
  const downLimit = Math.max(...within(ms(a.scaleDownAfter)));

  let desired = previous;
  let reason: AutoscaleDecision['reason'] = 'Steady';
  if (previous === 0 && demand.waiting > 0) {
    // Requests are held for this pool right now: no window delays the first member.
    desired = Math.max(1, recommendation);
    reason = 'Woken';
  } else if (recommendation === 0 && previous > 0 && a.minReplicas === 0 && !busy && idleLongEnough) {
    // scaleToZeroAfter is the window for the last step to zero.
    desired = 0;
    reason = 'ScaledToZero';
  } else {
    if (desired < upLimit) desired = upLimit;
    if (desired > downLimit) desired = downLimit;
    desired = Math.min(a.maxReplicas, Math.max(a.minReplicas, desired));
    if (desired > previous) reason = 'ScaledUp';
    else if (desired < previous) reason = 'ScaledDown';
    else if (recommendation !== previous) reason = 'Held';
  }
  const message =
    `desired ${previous} → ${desired}: demand inFlight ${demand.inFlight}, waiting ${demand.waiting}, ` +
    `startedPerSecond ${round(demand.startedPerSecond)} from ${demand.gateways} gateway(s); ${ready} Ready; ` +
    `${metric.name} ${metric.target}; recommendation ${recommendation} ` +
    `(windows: up ${a.scaleUpStabilization} → at least ${upLimit}, down ${a.scaleDownAfter} → at most ${downLimit}; ` +
    `min ${a.minReplicas}, max ${a.maxReplicas})`;
  const state: AutoscaleState = { recommendations, ...(lastDemandAt !== undefined && { lastDemandAt }) };
  return { desired, recommendation, reason, message, state };
}

const round = (n: number) => Math.round(n * 100) / 100;
