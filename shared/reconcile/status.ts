/** Builds the next stored status from a decision (pure), and says whether it is worth a write. */
import { canonicalJson } from '../domain/spec-hash.js';
import type { Condition, ConditionType, ProxyStatus } from '../domain/status.js';
import type { ErrorInfo } from '../errors.js';
import { backoffMs, failedConditions, type Decision, type Observation, type Policy } from './decision.js';
import { classifyFailure } from './failure.js';
import { countedEarlier, countNeverReady, passedProbe } from './never-ready.js';
import { fingerprintToKeep, pinnedFingerprint, tlsCondition } from './tls-pin.js';

const iso = (ms: number) => new Date(ms).toISOString();

/** Merges condition updates, keeping `lastTransitionTime` when the status did not change. */
export function mergeConditions(previous: Condition[], updates: Decision['conditions'], now: number): Condition[] {
  const byType = new Map<ConditionType, Condition>(previous.map((c) => [c.type, c]));
  for (const [type, next] of Object.entries(updates) as [ConditionType, (typeof updates)[ConditionType]][]) {
    if (!next) continue;
    const old = byType.get(type);
    const lastTransitionTime = old && old.status === next.status ? old.lastTransitionTime : iso(now);
    byType.set(type, { type, ...next, lastTransitionTime });
  }
  return [...byType.values()].sort((a, b) => a.type.localeCompare(b.type));
}

/**
 * The status after a decision.
 *
 * @param generation - the proxy generation the decision was made for
 */
export function nextStatus(
  previous: ProxyStatus,
  decision: Decision,
  observation: Observation,
  generation: number,
  now: number,
  policy: Policy,
): ProxyStatus {
  const next: ProxyStatus = {
    ...previous,
    phase: decision.phase,
    observedGeneration: generation,
    conditions: mergeConditions(previous.conditions, decision.conditions, now),
  };
  if (observation.kind === 'found') {
    const i = observation.instance;
    const pinned = pinnedFingerprint(previous.instance, i);
    const tlsFingerprint = fingerprintToKeep(i, pinned);
    next.instance = {
      name: i.name,
      ip: i.ip,
      port: i.port,
      ...(i.tlsPort !== undefined && { tlsPort: i.tlsPort }),
      ...(tlsFingerprint !== undefined && { tlsFingerprint }),
      state: i.state,
      createdAt: iso(i.createdAt),
      specHash: i.specHash,
      ...(passedProbe(previous.instance, i) ? { passedProbe: true } : {}),
    };
    if (i.state === 'Running' && i.ip) next.address = `${i.ip}:${i.port}`;
    else delete next.address;
    if (i.health) next.health = i.health;
    const tls = tlsCondition(i, pinned);
    if (tls) next.conditions = mergeConditions(next.conditions, { TlsPinned: tls }, now);
    else next.conditions = next.conditions.filter((c) => c.type !== 'TlsPinned');
  } else if (observation.kind === 'notFound') {
    delete next.instance;
    delete next.address;
    delete next.health;
  }
  if (decision.failure) {
    const f = decision.failure;
    Object.assign(next, recordFailure(next, f.error, f.failedAt, now, policy, f.specHash));
  }
  if (decision.action === 'create') next.everCreated = true;
  if (decision.neverReady) next.unreachable = countNeverReady(previous.unreachable, generation, decision.neverReady);
  // A count from an older generation no longer applies: the apply that moved it resumes creation.
  // It is kept while an instance it counted may still be there (seen, or not looked at: a failed
  // get), so that one is not counted again; it goes once the instance is gone or another is seen.
  else if (
    next.unreachable &&
    next.unreachable.generation !== generation &&
    olderCountDone(next.unreachable, generation, observation)
  )
    delete next.unreachable;
  if (decision.phase === 'Ready') {
    delete next.retry;
    delete next.failedSpecHash;
    delete next.unreachable;
  }
  return next;
}

/** The retry/failure fields after a provider error (a failed create, sync or async). */
export function recordFailure(
  previous: ProxyStatus,
  error: ErrorInfo,
  failedAt: number,
  now: number,
  policy: Policy,
  desiredHash?: string,
): Pick<ProxyStatus, 'retry' | 'failedSpecHash' | 'phase' | 'conditions'> {
  const failure = classifyFailure(error);
  const conditions = mergeConditions(previous.conditions, failedConditions(failure.reason, error.message), now);
  if (failure.permanent) {
    return {
      phase: failure.phase,
      conditions,
      failedSpecHash: desiredHash ?? previous.failedSpecHash,
      retry: previous.retry,
    };
  }
  const attempts = (previous.retry?.attempts ?? 0) + 1;
  const wait = Math.max(backoffMs(attempts, policy), error.retryAfterMs ?? 0);
  return {
    phase: failure.phase,
    conditions,
    failedSpecHash: previous.failedSpecHash,
    retry: { attempts, notBefore: iso(now + wait), reason: failure.reason, failedAt },
  };
}

/** The part of a status that counts as a change (probe timing and latency jitter do not). */
function significant(status: ProxyStatus): unknown {
  const { health, ...rest } = status;
  if (!health) return rest;
  const { lastProbeAt: _at, latencyMs: _latency, ...stable } = health;
  return { ...rest, health: stable };
}

/**
 * Whether the new status must be written: a significant change, or the probe on record is
 * `refreshMs` older than this one (the coarse refresh, `statusRefreshSeconds`). Keeps a healthy,
 * unchanged proxy's check at no read (warm sweep cache) and no write.
 */
export function statusChanged(previous: ProxyStatus, next: ProxyStatus, now: number, refreshMs: number): boolean {
  if (canonicalJson(significant(previous)) !== canonicalJson(significant(next))) return true;
  return probeGainMs(previous, next) >= refreshMs;
}

/** How much later `next`'s probe is than `previous`'s (infinite when only `next` has one). */
export function probeGainMs(previous: ProxyStatus, next: ProxyStatus): number {
  const written = Date.parse(previous.health?.lastProbeAt ?? '');
  const latest = Date.parse(next.health?.lastProbeAt ?? '');
  if (Number.isNaN(latest)) return Number.NEGATIVE_INFINITY;
  return Number.isNaN(written) ? Number.POSITIVE_INFINITY : latest - written;
}

/** Whether an older generation's count can go: the instance it counted last is gone, or another is seen. */
function olderCountDone(
  record: NonNullable<ProxyStatus['unreachable']>,
  generation: number,
  observation: Observation,
): boolean {
  if (observation.kind === 'notFound') return true;
  if (observation.kind !== 'found') return false;
  return !countedEarlier(record, generation, observation.instance);
}
