/**
 * Reconciles one proxy: observe (`observe.ts`), decide (pure, `decide.ts`), act under a lease and
 * write the status fenced (`act.ts`).
 */
import { rolloutLimit, type Config } from '../config/schema.js';
import { expandCatalogue } from '../config/catalogue.js';
import { parseDuration } from '../domain/duration.js';
import { POOL_LABEL } from '../domain/names.js';
import { specHash } from '../domain/spec-hash.js';
import type { ProxyDoc } from '../domain/status.js';
import { asEgressError } from '../errors.js';
import type { Provider } from '../providers/contract.js';
import type { StoredProxy } from '../store/ports.js';
import { act } from './act.js';
import type { CheckBatch } from './batch.js';
import {
  subjectOf,
  type Desired,
  type ReconcileDeps,
  type ReconcileOptions,
  type ReconcileResult,
  type Subject,
} from './context.js';
import { decide } from './decide.js';
import type { DecideInput, Decision, Observation } from './decision.js';
import { observe } from './observe.js';
import { nextStatus } from './status.js';
import { changesNothing } from './stored-observation.js';

/** Resolves catalogue references, then lets the provider validate and complete the placement. */
export function resolvePlacement(
  config: Config,
  provider: Provider,
  placement: Record<string, unknown>,
): Record<string, unknown> {
  const configured = config.providers.find((p) => p.name === provider.name) ?? { name: provider.name, catalogue: {} };
  return provider.resolvePlacement(expandCatalogue(configured, placement));
}

/**
 * Brings one proxy one step closer to its desired state. Safe to run concurrently and repeatedly:
 * mutating provider calls happen under a lease, and status writes are fenced by generation.
 *
 * @param batch - what the proxies of one check message share (`newCheckBatch`, made by the caller)
 */
export async function reconcileProxy(
  deps: ReconcileDeps,
  stored: StoredProxy,
  batch: CheckBatch,
  options: ReconcileOptions = {},
): Promise<ReconcileResult> {
  const subject = subjectOf(deps, stored);
  const { doc } = subject;
  const desired = desiredOf(deps.config, subject.provider, doc);
  let observed = await observe(deps, subject, batch, options.reuseObservation === true);
  let input = decideInput(subject, desired, observed.observation);
  if (observed.reused) {
    // The stored observation only confirms that nothing is to be done: anything else is decided
    // again on a fresh observation.
    const decision = decide(input);
    const { now, refreshMs, policy } = subject;
    const next = nextStatus(doc.status, decision, observed.observation, doc.generation, now(), policy);
    if (changesNothing(decision, doc.status, next, now(), refreshMs))
      return { name: subject.name, action: 'none', phase: next.phase };
    observed = await observe(deps, subject, batch, false);
    input = decideInput(subject, desired, observed.observation);
  }
  const decision = await withinRolloutBudget(deps, subject, input, decide(input));
  return act(deps, {
    subject,
    desired,
    observation: observed.observation,
    decision,
    verifyEgress: options.verifyEgress === true,
    reanchor: observed.changedSinceProbe === true,
  });
}

/** The resolved placement and spec hash; a placement that does not resolve is a failure to report, not to throw. */
function desiredOf(config: Config, provider: Provider | undefined, doc: ProxyDoc): Desired {
  if (!provider) return { placement: {}, hash: undefined, error: undefined };
  try {
    const placement = resolvePlacement(config, provider, doc.spec.placement);
    return { placement, hash: specHash(doc.spec, placement), error: undefined };
  } catch (err) {
    return { placement: {}, hash: undefined, error: asEgressError(err).toInfo() };
  }
}

function decideInput(subject: Subject, desired: Desired, observation: Observation): DecideInput {
  const { doc } = subject;
  return {
    now: subject.now(),
    generation: doc.generation,
    desiredHash: desired.hash,
    placementError: desired.error,
    maxAgeMs: doc.spec.maxAge ? parseDuration(doc.spec.maxAge) : undefined,
    status: doc.status,
    observation,
    policy: subject.policy,
    replacementBudget: true,
    pooled: doc.metadata.labels[POOL_LABEL] !== undefined,
    deletionRequestedAt: doc.deletionRequestedAt ? Date.parse(doc.deletionRequestedAt) : undefined,
  };
}

/**
 * A drift or rotation replacement counts against the provider's rollout budget: while as many of
 * its proxies as the budget allows (`rolloutLimit`: a number, or a share of the provider's
 * proxies) are Replacing, and this one is not yet, the decision is taken again without budget.
 */
async function withinRolloutBudget(
  deps: ReconcileDeps,
  subject: Subject,
  input: DecideInput,
  decision: Decision,
): Promise<Decision> {
  const { provider } = subject;
  if ((decision.replace !== 'drift' && decision.replace !== 'rotation') || !deps.rolloutCounts || !provider)
    return decision;
  if (subject.doc.status.phase === 'Replacing') return decision;
  const budget = deps.config.providers.find((p) => p.name === provider.name)?.rolloutBudget ?? 1;
  const counts = await deps.rolloutCounts(provider.name);
  if (counts.replacing < rolloutLimit(budget, counts.proxies)) return decision;
  return decide({ ...input, replacementBudget: false });
}
