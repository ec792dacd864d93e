/**
 * What a reconcile works with: its dependencies, the proxy in hand (`Subject`), and its result.
 * Every store read, lease and write of the reconcile goes through `ReconcileDeps.proxies`.
 */
import type { Config } from '../config/schema.js';
import type { EgressLocator } from '../egress-location/database.js';
import { instanceName } from '../domain/names.js';
import type { ProxyDoc } from '../domain/status.js';
import type { ErrorInfo } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Provider, Registry } from '../providers/contract.js';
import type { probeThroughProxy } from '../probe/probe.js';
import type { ProviderStatusRepository, StoredProxy } from '../store/ports.js';
import type { ProxyRepository } from '../store/ports.js';
import type { Decision, Policy } from './decision.js';

export interface ReconcileDeps {
  config: Config;
  proxies: ProxyRepository;
  registry: Registry;
  logger: Logger;
  now?: () => number;
  /** Probes an instance through itself (injected so tests can count calls). */
  probe?: typeof probeThroughProxy;
  /** Counts this provider's proxies, and those in phase Replacing (the rollout budget). */
  rolloutCounts?: ProxyRepository['rolloutCounts'];
  /** The provider-health monitor's verdicts; without them each batch asks the providers. */
  providerStatus?: ProviderStatusRepository;
  /** Locates egress IPs; the packaged database (read on first use) by default. */
  locator?: EgressLocator;
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

/** The proxy being reconciled, as read, with what every step derives from it once. */
export interface Subject {
  doc: ProxyDoc;
  /** The update time of the read `doc` came from: the basis of the lease (see `lease.ts`). */
  readAt: string;
  name: string;
  /** The provider's name for its instance (`instanceName`). */
  instanceName: string;
  /** Undefined when `spec.provider` names no configured provider. */
  provider: Provider | undefined;
  log: Logger;
  policy: Policy;
  /** How long an unchanged flagged egress result keeps its time (`heartbeatSeconds`). */
  heartbeatMs: number;
  /** How often an unchanged healthy status is rewritten (`statusRefreshSeconds`). */
  refreshMs: number;
  now: () => number;
}

/** The desired state: the resolved placement and its spec hash, or why the placement is invalid. */
export interface Desired {
  placement: Record<string, unknown>;
  /** Undefined when there is no provider or the placement is invalid. */
  hash: string | undefined;
  error: ErrorInfo | undefined;
}

export function policyOf(config: Config): Policy {
  return {
    unhealthyAfter: config.unhealthyAfter,
    neverReadyLimit: config.neverReadyLimit,
    backoffBaseMs: config.backoffBaseSeconds * 1000,
    backoffMaxMs: config.backoffMaxSeconds * 1000,
    pollMs: 2000,
    drainMs: config.drainSeconds * 1000,
  };
}

export function subjectOf(deps: ReconcileDeps, { doc, readAt }: StoredProxy): Subject {
  const name = doc.metadata.name;
  return {
    doc,
    readAt,
    name,
    instanceName: instanceName(deps.config.installationId, name),
    provider: deps.registry.get(doc.spec.provider),
    log: deps.logger.child({ proxy: name }),
    policy: policyOf(deps.config),
    heartbeatMs: deps.config.heartbeatSeconds * 1000,
    refreshMs: deps.config.statusRefreshSeconds * 1000,
    now: deps.now ?? Date.now,
  };
}

/** Nothing done this time: look again soon (a lease refused or run out, a failed last delete). */
export function skipped(subject: Subject): ReconcileResult {
  return { name: subject.name, action: 'none', phase: subject.doc.status.phase, recheckAfterMs: subject.policy.pollMs };
}
