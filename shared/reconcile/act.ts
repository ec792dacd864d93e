/**
 * The act step: carries out a decision — finalises a deleted proxy, or makes the provider call
 * under the lease (`withLease`) — then writes the status (fenced) and records events.
 */
import { POOL_LABEL } from '../domain/names.js';
import type { ProxyStatus } from '../domain/status.js';
import { ValidationError, type ErrorInfo } from '../errors.js';
import type { Provider } from '../providers/contract.js';
import { generateCredentials } from '../store/credentials-memo.js';
import { skipped, type Desired, type ReconcileDeps, type ReconcileResult, type Subject } from './context.js';
import type { Decision, Observation } from './decision.js';
import { packagedLocator } from '../egress-location/database.js';
import { locateEgress } from '../egress-location/verify.js';
import { verifyEgress } from './egress.js';
import { classifyFailure } from './failure.js';
import { withLease, type ProviderCall } from './lease.js';
import { nextStatus, probeGainMs, recordFailure, statusChanged } from './status.js';

/** A decision with what it was made on. */
export interface Plan {
  subject: Subject;
  desired: Desired;
  observation: Observation;
  decision: Decision;
  /** Compare the egress IP with the fleet now. */
  verifyEgress: boolean;
  /**
   * The instance changed since the probe on record (the sweep could not rely on it): a newer probe
   * is written even when nothing else changed, so that later sweeps can rely on it again.
   */
  reanchor?: boolean;
}

/** The status to write and the decision as it turned out (a failed call changes its message). */
interface Outcome {
  status: ProxyStatus;
  decision: Decision;
}

export async function act(deps: ReconcileDeps, plan: Plan): Promise<ReconcileResult> {
  const { subject, decision } = plan;
  const { doc, provider, policy, now } = subject;
  if (decision.action === 'finalise') return finalise(deps, subject);
  const status = nextStatus(doc.status, decision, plan.observation, doc.generation, now(), policy);
  if (!provider || (decision.action !== 'create' && decision.action !== 'delete'))
    return record(deps, plan, { status, decision });
  // A create's credentials are read while the lease is taken, not after it: one round trip fewer
  // between the request and the provider's create. A lease not held wastes that one read.
  const credentials = decision.action === 'create' ? readCredentials(deps, subject) : undefined;
  credentials?.catch(() => undefined); // a failure is thrown where it is awaited (prepareCreate)
  // The instance after a replaced one gets credentials of its own: new ones are stored in the
  // commit that takes the lease for the replaced instance's delete (a refused lease, from a
  // duplicated or late check, stores nothing). The create that follows, and any resend of it,
  // reads them; the old password dies with the old instance.
  const renewed = decision.action === 'delete' && decision.replace ? generateCredentials(subject.name) : undefined;
  const leased = await withLease(
    deps,
    subject,
    () =>
      credentials
        ? prepareCreate(deps, plan, provider, credentials)
        : Promise.resolve(() => provider.delete(subject.instanceName)),
    renewed,
  );
  if (!leased.held) return skipped(subject);
  const outcome = leased.error ? afterFailedCall(plan, status, leased.error) : { status, decision };
  return record(deps, plan, outcome, leased.holder);
}

/**
 * Removes a deleted proxy whose instance is gone. An instance that is gone can leave parts behind
 * (a Kubernetes Secret whose Pod never started, the volumes of a kvm domain undefined out of band):
 * one more delete, which is idempotent, runs before the proxy is removed, under the lease like
 * every mutating call.
 */
async function finalise(deps: ReconcileDeps, subject: Subject): Promise<ReconcileResult> {
  const { doc, name, provider, log, instanceName: instance } = subject;
  if (provider && doc.status.everCreated) {
    const leased = await withLease(deps, subject, () => Promise.resolve(() => provider.delete(instance)));
    if (!leased.held) return skipped(subject);
    if (leased.error) {
      const e = leased.error;
      log.warn('delete before removing the proxy failed', { instance, code: e.code, error: e.message });
      await deps.proxies.writeStatus(name, doc.generation, doc.status, subject.now(), leased.holder);
      return skipped(subject);
    }
  }
  if (await deps.proxies.finalise(name, doc.generation)) log.info('proxy deleted', { instance });
  const pool = doc.metadata.labels[POOL_LABEL];
  return { name, action: 'finalise', phase: 'Deleting', ...(pool ? { pool } : {}) };
}

/**
 * The credentials of the instance about to be created, read afresh (made by the proxy's apply, and
 * renewed only with the lease of a replaced instance's delete, never while a create is due, so
 * reading them before the lease is as good).
 */
async function readCredentials(deps: ReconcileDeps, subject: Subject) {
  const { name, doc } = subject;
  const credentials = await deps.proxies.credentials(name, { incarnation: doc.createdAt, fresh: true });
  if (!credentials) throw new ValidationError('credentials', `credentials/${name} is missing; re-apply the proxy`);
  return credentials;
}

/** The create call, once the lease is held and the credentials (read alongside it) are in. */
async function prepareCreate(
  deps: ReconcileDeps,
  plan: Plan,
  provider: Provider,
  read: Promise<Awaited<ReturnType<typeof readCredentials>>>,
): Promise<ProviderCall> {
  const { subject, desired } = plan;
  const { name, doc } = subject;
  const credentials = await read;
  const spec = {
    name: subject.instanceName,
    proxy: name,
    installationId: deps.config.installationId,
    specHash: desired.hash ?? '',
    port: doc.spec.port,
    placement: desired.placement,
    credentials,
  };
  return () => provider.create(spec);
}

/** A failed create records the failure (backoff, or Failed); either call says so and may ask to look again soon. */
function afterFailedCall({ subject, decision, desired }: Plan, status: ProxyStatus, e: ErrorInfo): Outcome {
  const { log, now, policy } = subject;
  log.warn(`provider ${decision.action} failed`, { instance: subject.instanceName, code: e.code, error: e.message });
  return {
    status:
      decision.action === 'create'
        ? { ...status, ...recordFailure(status, e, now(), now(), policy, desired.hash) }
        : status,
    decision: {
      ...decision,
      message: `${decision.action} failed: ${e.message}`,
      recheckAfterMs: classifyFailure(e).retrySoon ? policy.pollMs : decision.recheckAfterMs,
    },
  };
}

/**
 * Verifies the egress IP when due, writes the status (fenced; a lease holder's write releases its
 * lease) when it changed or a lease was taken, and records the events.
 */
async function record(deps: ReconcileDeps, plan: Plan, outcome: Outcome, holder?: string): Promise<ReconcileResult> {
  const { doc, name, now, heartbeatMs, refreshMs, log } = plan.subject;
  const { decision } = outcome;
  const egress = await verifyEgress(
    deps.proxies,
    name,
    doc.status,
    outcome.status,
    now(),
    heartbeatMs,
    plan.verifyEgress,
  );
  const expected = plan.subject.provider?.expectedCountry?.(plan.desired.placement);
  const status = locateEgress(egress.status, deps.locator ?? packagedLocator(), expected, now());
  const phaseChanged = status.phase !== doc.status.phase;
  if (
    holder ||
    statusChanged(doc.status, status, now(), refreshMs) ||
    (plan.reanchor && probeGainMs(doc.status, status) > 0)
  ) {
    // Without a lease taken the document is likely as read: decide the write on that copy (no read).
    const basis = holder ? undefined : { doc, readAt: plan.subject.readAt };
    const written = await deps.proxies.writeStatus(name, doc.generation, status, now(), holder, basis);
    if (!written) log.debug('status write fenced off (generation moved or lease lost)');
  }
  if (phaseChanged || decision.action === 'create' || decision.failure !== undefined) {
    const warning = status.phase === 'Failed' || status.phase === 'Unhealthy' || decision.replace !== undefined;
    const reason = decision.replace ? `Replace:${decision.replace}` : status.phase;
    const event = { type: warning ? ('Warning' as const) : ('Normal' as const), reason, message: decision.message };
    await deps.proxies.addEvent(name, { at: new Date(now()).toISOString(), ...event }, deps.config.maxEvents);
    log.info(decision.message, { phase: status.phase, action: decision.action });
  }
  if (egress.event) {
    const event = { at: new Date(now()).toISOString(), type: 'Warning' as const, ...egress.event };
    await deps.proxies.addEvent(name, event, deps.config.maxEvents);
    log.warn(egress.event.message);
  }
  const result: ReconcileResult = { name, action: decision.action, phase: status.phase };
  if (decision.recheckAfterMs !== undefined) result.recheckAfterMs = decision.recheckAfterMs;
  if (egress.kick.length > 0) result.verifyEgressOf = egress.kick;
  const pool = doc.metadata.labels[POOL_LABEL];
  if (pool && phaseChanged) result.pool = pool;
  return result;
}
