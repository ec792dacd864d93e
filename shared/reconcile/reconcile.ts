/** Reconciles one proxy: observe, probe, decide (pure), act under a lease, write status fenced. */
import { randomUUID } from 'node:crypto';
import type { Config } from '../config/schema.js';
import { instanceName, POOL_LABEL } from '../domain/names.js';
import { specHash } from '../domain/spec-hash.js';
import type { ProxyDoc } from '../domain/status.js';
import { asEgressError, ValidationError, type ErrorInfo } from '../errors.js';
import { parseDuration } from '../domain/duration.js';
import type { Logger } from '../logger.js';
import type { Provider, ProviderHealth, Registry } from '../providers/contract.js';
import { nextHealth, probeThroughProxy, type ProbeResult } from '../probe/probe.js';
import type { ProxyStore } from '../store/proxies.js';
import type { ProviderStore } from '../store/providers.js';
import { currentHealth } from '../health.js';
import { decide } from './decide.js';
import type { Decision, Observation, Policy } from './decision.js';
import { verifyEgress } from './egress.js';
import { classifyFailure } from './failure.js';
import { nextStatus, recordFailure, statusChanged } from './status.js';
import { changesNothing, storedObservation } from './stored-observation.js';

export interface ReconcileDeps {
  config: Config;
  proxies: ProxyStore;
  registry: Registry;
  logger: Logger;
  now?: () => number;
  /** Probes an instance through itself (injected so tests can count calls). */
  probe?: typeof probeThroughProxy;
  /** Counts this provider's proxies in phase Replacing (the rollout budget). */
  countReplacing?: (provider: string) => Promise<number>;
  /** The provider-health monitor's verdicts; without them each batch asks the providers. */
  providerStatus?: ProviderStore;
}

export interface ReconcileResult {
  name: string;
  action: Decision['action'];
  phase: Decision['phase'];
  /** Set when the proxy should be looked at again soon. */
  recheckAfterMs?: number;
  /** Other proxies found sharing this one's egress IP: they should verify theirs too. */
  verifyEgressOf?: string[];
  /** The pool of a member whose phase changed (or that was removed): it reconciles again. */
  pool?: string;
}

/** Per-batch memo of provider health, so a batch checks each provider once. */
export type HealthCache = Map<string, Promise<ProviderHealth | undefined>>;

export function policyOf(config: Config): Policy {
  return {
    unhealthyAfter: config.unhealthyAfter,
    backoffBaseMs: config.backoffBaseSeconds * 1000,
    backoffMaxMs: config.backoffMaxSeconds * 1000,
    pollMs: 2000,
  };
}

/** Resolves catalogue references, then lets the provider validate and complete the placement. */
export function resolvePlacement(
  config: Config,
  provider: Provider,
  placement: Record<string, unknown>,
): Record<string, unknown> {
  const { catalogue, ...rest } = placement;
  let base: Record<string, unknown> = {};
  if (catalogue !== undefined) {
    const entries = config.providers.find((p) => p.name === provider.name)?.catalogue ?? {};
    const entry = typeof catalogue === 'string' ? entries[catalogue] : undefined;
    if (!entry)
      throw new ValidationError(
        'spec.placement.catalogue',
        `unknown catalogue entry ${JSON.stringify(catalogue)} for provider "${provider.name}" (known: ${Object.keys(entries).join(', ') || 'none'})`,
      );
    base = { ...entry };
  }
  return provider.resolvePlacement({ ...base, ...rest });
}

async function observe(provider: Provider, name: string, health: ProviderHealth | undefined): Promise<Observation> {
  if (health && !health.ok) return { kind: 'providerDown', message: health.message };
  try {
    return { kind: 'found', instance: await provider.get(name) };
  } catch (err) {
    const e = asEgressError(err);
    return e.code === 'NotFound' ? { kind: 'notFound' } : { kind: 'error', error: e.toInfo() };
  }
}

function providerHealth(
  deps: ReconcileDeps,
  provider: Provider,
  cache: HealthCache,
): Promise<ProviderHealth | undefined> {
  let cached = cache.get(provider.name);
  if (!cached) {
    const intervalMs = deps.config.healthIntervalSeconds * 1000;
    cached = currentHealth(provider, {
      providerStatus: deps.providerStatus,
      intervalMs,
      now: (deps.now ?? Date.now)(),
    });
    cache.set(provider.name, cached);
  }
  return cached;
}

/** How a check looks at a proxy. */
export interface ReconcileOptions {
  /** Compare the egress IP with the fleet now (a peer was found sharing it). */
  verifyEgress?: boolean;
  /**
   * A sweep: a settled relay-backed proxy may be confirmed from its stored status without reading
   * the relay's inventory (`storedObservation`); any change is then decided on a fresh observation.
   */
  reuseObservation?: boolean;
}

/**
 * Brings one proxy one step closer to its desired state. Safe to run concurrently and repeatedly:
 * mutating provider calls happen under a lease, and status writes are fenced by generation.
 */
export async function reconcileProxy(
  deps: ReconcileDeps,
  doc: ProxyDoc,
  cache: HealthCache = new Map(),
  options: ReconcileOptions = {},
): Promise<ReconcileResult> {
  const now = deps.now ?? Date.now;
  const { config, proxies } = deps;
  const name = doc.metadata.name;
  const log = deps.logger.child({ proxy: name });
  const policy = policyOf(config);
  const heartbeatMs = config.heartbeatSeconds * 1000;
  const provider = deps.registry.get(doc.spec.provider);
  const iname = instanceName(config.installationId, name);

  let desiredHash: string | undefined;
  let placementError: ErrorInfo | undefined;
  let placement: Record<string, unknown> = {};
  let observation: Observation;
  let reused = false;
  if (!provider) {
    observation = {
      kind: 'providerMissing',
      provider: doc.spec.provider,
      message: deps.registry.missing(doc.spec.provider),
    };
  } else {
    try {
      placement = resolvePlacement(config, provider, doc.spec.placement);
      desiredHash = specHash(doc.spec, placement);
    } catch (err) {
      placementError = asEgressError(err).toInfo();
    }
    const health = await providerHealth(deps, provider, cache);
    const stored = options.reuseObservation
      ? await storedObservation(doc, provider, config.installationId, health, now(), heartbeatMs, cache)
      : undefined;
    reused = stored !== undefined;
    observation = stored ?? (await observe(provider, iname, health));
  }

  if (
    provider &&
    !provider.probesRemotely &&
    observation.kind === 'found' &&
    observation.instance.state === 'Running'
  ) {
    const result = await probeOwn(deps, doc, observation.instance.ip, observation.instance.port);
    observation.instance.health = nextHealth(doc.status.health, result, new Date(now()));
  }

  const input = {
    now: now(),
    deleting: doc.deletionRequestedAt !== undefined,
    desiredHash,
    placementError,
    maxAgeMs: doc.spec.maxAge ? parseDuration(doc.spec.maxAge) : undefined,
    status: doc.status,
    observation,
    policy,
    replacementBudget: true,
    pooled: doc.metadata.labels[POOL_LABEL] !== undefined,
  };
  let decision = decide(input);
  if (reused) {
    const next = nextStatus(doc.status, decision, observation, doc.generation, now(), policy);
    if (changesNothing(decision, doc.status, next, now(), heartbeatMs))
      return { name, action: 'none', phase: next.phase };
    return reconcileProxy(deps, doc, cache, { ...options, reuseObservation: false });
  }
  if ((decision.replace === 'drift' || decision.replace === 'rotation') && deps.countReplacing && provider) {
    const budget = config.providers.find((p) => p.name === provider.name)?.rolloutBudget ?? 1;
    if ((await deps.countReplacing(provider.name)) >= budget && doc.status.phase !== 'Replacing')
      decision = decide({ ...input, replacementBudget: false });
  }

  if (decision.action === 'finalise') {
    // An instance that is gone can leave parts behind (a Kubernetes Secret whose Pod never started,
    // the volumes of a kvm domain undefined out of band): one more delete, which is idempotent, runs
    // before the proxy is removed, under the lease like every mutating call.
    if (provider && doc.status.everCreated) {
      const holder = randomUUID();
      const leaseUntil = await proxies.acquireLease(name, holder, doc.generation, config.leaseSeconds * 1000, now, doc);
      if (leaseUntil === undefined || now() >= leaseUntil)
        return { name, action: 'none', phase: doc.status.phase, recheckAfterMs: policy.pollMs };
      try {
        await provider.delete(iname);
      } catch (err) {
        const e = asEgressError(err).toInfo();
        log.warn('delete before removing the proxy failed', { instance: iname, code: e.code, error: e.message });
        await proxies.writeStatus(name, doc.generation, doc.status, now(), holder);
        return { name, action: 'none', phase: doc.status.phase, recheckAfterMs: policy.pollMs };
      }
    }
    if (await proxies.finalise(name, doc.generation)) log.info('proxy deleted', { instance: iname });
    const pool = doc.metadata.labels[POOL_LABEL];
    return { name, action: 'finalise', phase: 'Deleting', ...(pool ? { pool } : {}) };
  }

  let status = nextStatus(doc.status, decision, observation, doc.generation, now(), policy);
  let holder: string | undefined;
  if (provider && (decision.action === 'create' || decision.action === 'delete')) {
    holder = randomUUID();
    const leaseUntil = await proxies.acquireLease(name, holder, doc.generation, config.leaseSeconds * 1000, now, doc);
    if (leaseUntil === undefined) {
      log.debug('lease held elsewhere, or the proxy changed since it was read; skipping', { action: decision.action });
      return { name, action: 'none', phase: doc.status.phase, recheckAfterMs: policy.pollMs };
    }
    // A worker paused past its lease (a timed-out function resuming later) must not act on its
    // stale decision: another may have acted since (a late delete would kill a new instance).
    let paused = false;
    try {
      if (decision.action === 'create') {
        const credentials = await proxies.credentials(name, { incarnation: doc.createdAt, fresh: true });
        if (!credentials)
          throw new ValidationError('credentials', `credentials/${name} is missing; re-apply the proxy`);
        paused = now() >= leaseUntil;
        if (!paused)
          await provider.create({
            name: iname,
            proxy: name,
            installationId: config.installationId,
            specHash: desiredHash ?? '',
            port: doc.spec.port,
            placement,
            credentials,
          });
      } else {
        paused = now() >= leaseUntil;
        if (!paused) await provider.delete(iname);
      }
    } catch (err) {
      const e = asEgressError(err).toInfo();
      log.warn(`provider ${decision.action} failed`, { instance: iname, code: e.code, error: e.message });
      if (decision.action === 'create')
        status = { ...status, ...recordFailure(status, e, now(), now(), policy, desiredHash) };
      decision = {
        ...decision,
        message: `${decision.action} failed: ${e.message}`,
        recheckAfterMs: classifyFailure(e).retrySoon ? policy.pollMs : decision.recheckAfterMs,
      };
    }
    if (paused) {
      log.warn('lease expired before the provider call; leaving it to the next check', { action: decision.action });
      return { name, action: 'none', phase: doc.status.phase, recheckAfterMs: policy.pollMs };
    }
  }

  const egress = await verifyEgress(proxies, name, doc.status, status, now(), heartbeatMs, options.verifyEgress);
  status = egress.status;
  const phaseChanged = status.phase !== doc.status.phase;
  if (holder || statusChanged(doc.status, status, now(), heartbeatMs)) {
    const written = await proxies.writeStatus(name, doc.generation, status, now(), holder);
    if (!written) log.debug('status write fenced off (generation moved or lease lost)');
  }
  if (phaseChanged || decision.action === 'create' || decision.failure !== undefined) {
    const warning = status.phase === 'Failed' || status.phase === 'Unhealthy' || decision.replace !== undefined;
    await proxies.addEvent(
      name,
      {
        at: new Date(now()).toISOString(),
        type: warning ? 'Warning' : 'Normal',
        reason: decision.replace ? `Replace:${decision.replace}` : status.phase,
        message: decision.message,
      },
      config.maxEvents,
    );
    log.info(decision.message, { phase: status.phase, action: decision.action });
  }
  if (egress.event) {
    const event = { at: new Date(now()).toISOString(), type: 'Warning' as const, ...egress.event };
    await proxies.addEvent(name, event, config.maxEvents);
    log.warn(egress.event.message);
  }
  const result: ReconcileResult = { name, action: decision.action, phase: status.phase };
  if (decision.recheckAfterMs !== undefined) result.recheckAfterMs = decision.recheckAfterMs;
  if (egress.kick.length > 0) result.verifyEgressOf = egress.kick;
  const pool = doc.metadata.labels[POOL_LABEL];
  if (pool && phaseChanged) result.pool = pool;
  return result;
}

/** Probes through the proxy with its credentials (remembered per incarnation; forgotten when a probe fails). */
async function probeOwn(deps: ReconcileDeps, doc: ProxyDoc, host: string, port: number): Promise<ProbeResult> {
  const name = doc.metadata.name;
  const credentials = await deps.proxies.credentials(name, { incarnation: doc.createdAt });
  if (!credentials) return { ok: false, latencyMs: 0, error: 'no credentials stored for this proxy' };
  const probe = deps.probe ?? probeThroughProxy;
  const result = await probe({
    host,
    port,
    ...credentials,
    echoUrl: deps.config.echoUrl,
    timeoutMs: deps.config.probeTimeoutSeconds * 1000,
  });
  if (!result.ok) deps.proxies.forgetCredentials(name);
  return result;
}
