/** The pool controller: one pool reconcile, planned and committed in one transaction on `pools/{name}`. */
import { canonicalJson } from '../domain/spec-hash.js';
import type { Bus } from '../bus/pubsub.js';
import type { Config } from '../config/schema.js';
import { memberSpec, spreadOf, templateHash } from '../domain/pool.js';
import { egressPerGib, memberPrice, poolCost } from '../cost/pool-cost.js';
import {
  NEVER_REACHABLE,
  type PoolCondition,
  type PoolCost,
  type PoolDoc,
  type PoolStatus,
} from '../domain/pool-status.js';
import type { ProxyDoc } from '../domain/status.js';
import { banApplies } from '../domain/reports.js';
import { freshVerdict } from '../health.js';
import type { Logger } from '../logger.js';
import type {
  DemandRepository,
  PoolRepository,
  PoolWrites,
  ProviderStatusRepository,
  ProxyRepository,
} from '../store/ports.js';
import { sumDemand } from '../store/demand-rules.js';
import type { PoolDemand } from '../domain/autoscale.js';
import { decideReplicas, hasDemand, type AutoscaleDecision } from './autoscale.js';
import { planPool, TEMPLATE_LABEL, wantedReplicas, type Plan } from './plan.js';
import { foldUsage, trackLevels, type FoldResult } from './usage.js';

export interface PoolDeps {
  config: Config;
  pools: PoolRepository;
  proxies: ProxyRepository;
  bus: Bus;
  logger: Logger;
  providerStatus?: ProviderStatusRepository | undefined;
  now?: () => number;
  /** Whether a member is marked banned (feedback from traffic). */
  banned?: (member: ProxyDoc) => boolean;
  /** Asks for checks of these members (kicks on `proxy-checks`). */
  kick: (names: string[]) => Promise<void>;
  /** The gateways' demand reports; without it an autoscaled pool sees no demand. */
  demand?: DemandRepository | undefined;
}

export interface PoolResult {
  name: string;
  /** Members created and drained by this reconcile. */
  created: string[];
  drained: string[];
  settled: boolean;
  recheckAfterMs?: number;
}

const POLL_MS = 2000;

function condition(
  previous: PoolCondition[],
  type: PoolCondition['type'],
  status: PoolCondition['status'],
  reason: string,
  message: string,
  now: number,
): PoolCondition {
  const before = previous.find((c) => c.type === type);
  const same = before && before.status === status;
  return {
    type,
    status,
    reason,
    message,
    lastTransitionTime: same ? before.lastTransitionTime : new Date(now).toISOString(),
  };
}

/** The `Progressing` condition's status, reason and message after `plan` for `wanted` members. */
function progress(pool: PoolDoc, plan: Plan, wanted: number): ['True' | 'False', string, string] {
  if (plan.settled) return ['False', 'Settled', `${wanted} members, all current`];
  const placed = `${plan.placed} of ${wanted} members placed`;
  if (plan.placed < wanted && !pool.deletionRequestedAt)
    return plan.overBudget
      ? [
          'True',
          'CostLimited',
          `${placed}: ${wanted} would cost $${plan.overBudget.wantedPerHourUsd.toFixed(4)}/h, above maxCostPerHour $${pool.spec.maxCostPerHour ?? 0}/h`,
        ]
      : ['True', 'CapReached', `${placed}: every available spread entry is at its maxReplicas`];
  const replacing = plan.waiting.length + plan.drains.length;
  return [
    'True',
    replacing > 0 ? 'Replacing' : 'Scaling',
    `${plan.live} live of ${wanted}; ${replacing} to replace or remove`,
  ];
}

/** The pool's status after `plan` for `wanted` members, with its conditions. */
function statusOf(
  pool: PoolDoc,
  plan: Plan,
  wanted: number,
  now: number,
  cost: PoolCost,
): Omit<PoolStatus, 'revision' | 'lastReconcileAt' | 'demand' | 'autoscale' | 'usage'> {
  const spec = pool.spec;
  const min = Math.min(spec.minAvailable ?? wanted, wanted);
  const prev = pool.status.conditions;
  const out = plan.entries.filter((e) => !e.available);
  const progressing = condition(prev, 'Progressing', ...progress(pool, plan, wanted), now);
  return {
    observedGeneration: pool.generation,
    desiredReplicas: wanted,
    replicas: plan.live,
    readyReplicas: plan.ready,
    updatedReplicas: plan.updated,
    terminating: plan.terminating,
    entries: plan.entries,
    cost,
    conditions: [
      plan.ready >= min
        ? condition(prev, 'Available', 'True', 'MinimumAvailable', `${plan.ready} Ready (minAvailable ${min})`, now)
        : condition(
            prev,
            'Available',
            'False',
            'BelowMinimum',
            `${plan.ready} Ready, fewer than minAvailable ${min}`,
            now,
          ),
      progressing,
      out.length > 0
        ? condition(
            prev,
            'Degraded',
            'True',
            out[0]?.reason ?? 'EntryUnavailable',
            out.map((e) => e.message).join('; '),
            now,
          )
        : condition(prev, 'Degraded', 'False', 'AllEntriesAvailable', 'every spread entry is available', now),
    ],
  };
}

/** A member whose current instance was reported banned (`status.ban`): its pool surges past it. */
export function isBanned(m: ProxyDoc): boolean {
  const born = m.status.instance ? Date.parse(m.status.instance.createdAt) : undefined;
  return banApplies(m.status.ban, born);
}

/** Provider name → why it is down, from the provider-health monitor's fresh verdicts. */
async function downProviders(deps: PoolDeps, now: number): Promise<Map<string, string>> {
  const down = new Map<string, string>();
  for (const status of (await deps.providerStatus?.all()) ?? []) {
    const verdict = freshVerdict(status, deps.config.healthIntervalSeconds * 1000, now);
    if (verdict?.status === 'Unhealthy') down.set(status.name, verdict.message);
  }
  return down;
}

/**
 * Brings one pool one step closer to `replicas` current members. Safe to run concurrently and
 * repeatedly (every kick may be delivered twice, late, or to two workers at once): the plan is
 * made and committed in one transaction with what it read, and members are created under fresh
 * names only inside it, so no two reconciles can both act on one view of the pool.
 */
export async function reconcilePool(deps: PoolDeps, name: string): Promise<PoolResult> {
  const clock = deps.now ?? Date.now;
  const down = await downProviders(deps, clock());
  const log = deps.logger.child({ pool: name });
  const price = (entry: { provider: string; placement: Record<string, unknown> }) =>
    memberPrice(deps.config.providers, entry).hourlyUsd ?? 0;
  const reports = (await deps.demand?.all(name)) ?? [];
  type Decided = { plan: Plan; pool: PoolDoc; now: number; scale?: Scale; usage: FoldResult } | undefined;
  const { result, created } = await deps.pools.reconcile<Decided>(name, clock, (pool, members, now) => {
    if (!pool) return { writes: { create: [], drain: [] }, result: undefined };
    const banned = deps.banned ?? isBanned;
    const { demand, held } = sumDemand(reports, now);
    const scale =
      pool.spec.autoscale && !pool.deletionRequestedAt ? autoscaleOf(pool, members, banned, demand, now) : undefined;
    const plan = planPool({
      pool,
      members,
      now,
      providerDown: (p) => down.get(p),
      recoverAfterMs: deps.config.poolRecoverSeconds * 1000,
      unhealthyAfter: deps.config.unhealthyAfter,
      neverReadyLimit: deps.config.neverReadyLimit,
      banned,
      memberHourly: (entry) => price(memberSpec(pool.spec.template, entry)),
      ...(scale && { replicas: scale.decision.desired }),
      // Sessions hold members of an autoscaled pool only: a fixed pool's reports carry usage alone.
      held: pool.spec.autoscale ? held : new Set(),
    });
    const hash = templateHash(pool.spec.template);
    const labels = { ...pool.spec.template.metadata.labels, [TEMPLATE_LABEL]: hash };
    const writes: PoolWrites = {
      create: plan.creates.map((c) => ({ spec: c.spec, labels })),
      drain: plan.drains.map((d) => d.name),
      finalise: plan.finalise,
    };
    const live = members.filter((m) => !m.deletionRequestedAt).map((m) => m.spec);
    const usage = foldUsage({
      previous: pool.status.usage,
      docs: reports,
      perHourUsd: pool.status.cost?.perHourUsd ?? 0,
      egressPerGibUsd: egressPerGib(deps.config.providers, live),
      now,
      everyMs: deps.config.usageIntervalSeconds * 1000,
    });
    // The hours follow the Ready members and the demand the live gateways report (in flight or waiting).
    const followed = trackLevels(
      usage.usage,
      { members: plan.ready, demand: demand.inFlight + demand.waiting },
      now,
      deps.config.usageIntervalSeconds * 1000,
    );
    const next = {
      ...statusOf(
        pool,
        plan,
        wantedReplicas({ pool, replicas: scale?.decision.desired }),
        now,
        poolCost(deps.config, live),
      ),
      ...(scale && { demand: scale.demand, autoscale: scale.decision.state }),
      ...(followed && { usage: followed }),
    };
    const { revision, lastReconcileAt: _at, ...before } = pool.status;
    const acting = writes.create.length + writes.drain.length > 0;
    // Key order is not content: the stored status comes back with its keys in another order.
    if (acting || canonicalJson(before) !== canonicalJson(next))
      writes.status = { ...next, revision: revision + 1, lastReconcileAt: new Date(now).toISOString() };
    return { writes, result: { plan, pool, now, usage, ...(scale && { scale }) } };
  });
  if (!result) return { name, created: [], drained: [], settled: true };
  const { plan, pool, now, scale, usage } = result;
  const drained = plan.drains.map((d) => d.name);
  if (scale) await scaleEvent(deps, pool, scale.decision, now);
  await events(deps, pool, plan, created, now, wantedReplicas({ pool, replicas: scale?.decision.desired }));
  if (created.length + drained.length > 0) {
    log.info('pool reconciled', { created, drained: plan.drains, live: plan.live, ready: plan.ready });
    await deps.kick([...created, ...drained]);
  }
  if (plan.finalise) {
    await deps.pools.removeEvents(name);
    log.info('pool deleted');
    return { name, created, drained, settled: true };
  }
  const out: PoolResult = { name, created, drained, settled: plan.settled };
  // A halted pool has nothing to do until it is applied again (or a member's phase changes, which kicks it).
  if ((!plan.settled && !plan.halted) || pool.deletionRequestedAt) out.recheckAfterMs = POLL_MS;
  const recovering = plan.entries.filter(
    (e) => !e.available && e.lastBadAt !== undefined && e.reason !== NEVER_REACHABLE,
  );
  if (out.recheckAfterMs === undefined && recovering.length > 0)
    out.recheckAfterMs = deps.config.poolRecoverSeconds * 1000;
  // An autoscaled pool not at rest looks at its demand again every interval (whatever the number
  // of gateways reporting it); at rest, a report of new demand kicks it (shared/api/demand.ts).
  if (scale && !atRest(scale, plan, pool.spec.autoscale?.minReplicas ?? 0)) {
    const interval = deps.config.autoscaleIntervalSeconds * 1000;
    out.recheckAfterMs = Math.min(out.recheckAfterMs ?? interval, interval);
  }
  // Counts folded now or waiting: look again when the next fold is due (a fixed pool too), until a
  // fold finds nothing new; a report with counts where none were waiting kicks the pool (demand-rules.ts).
  const foldIn = usage.counted ? deps.config.usageIntervalSeconds * 1000 : usage.dueInMs;
  if (foldIn !== undefined) out.recheckAfterMs = Math.min(out.recheckAfterMs ?? foldIn, foldIn);
  return out;
}

/** The autoscaler's decision for a pool and the demand it was made on. */
interface Scale {
  decision: AutoscaleDecision;
  demand: PoolDemand;
}

function autoscaleOf(
  pool: PoolDoc,
  members: ProxyDoc[],
  banned: (m: ProxyDoc) => boolean,
  demand: PoolDemand,
  now: number,
): Scale | undefined {
  const autoscale = pool.spec.autoscale;
  if (!autoscale) return undefined;
  const ready = members.filter((m) => m.status.phase === 'Ready' && !m.deletionRequestedAt && !banned(m)).length;
  const decision = decideReplicas({
    autoscale,
    demand,
    ready,
    previous: pool.status.desiredReplicas,
    state: pool.status.autoscale,
    now,
  });
  return { decision, demand };
}

/** Nothing used, at the minimum, settled: nothing for the autoscaler to do until demand is reported. */
function atRest({ decision, demand }: Scale, plan: Plan, minReplicas: number): boolean {
  const windowsEmpty = decision.state.recommendations.every((r) => r.replicas === decision.desired);
  return plan.settled && !hasDemand(demand) && decision.desired === minReplicas && windowsEmpty;
}

/** Every decision that changed (or held back) the pool's size is an event with its inputs. */
async function scaleEvent(deps: PoolDeps, pool: PoolDoc, decision: AutoscaleDecision, now: number): Promise<void> {
  if (decision.reason === 'Steady') return;
  const before = pool.status.autoscale?.recommendations.at(-1)?.replicas;
  // A recommendation held back by a window is told once, when it changes, not every interval.
  if (decision.reason === 'Held' && before === decision.recommendation) return;
  const at = new Date(now).toISOString();
  await deps.pools.addEvent(
    pool.metadata.name,
    { at, type: 'Normal', reason: decision.reason, message: decision.message },
    deps.config.maxEvents,
  );
}

async function events(
  deps: PoolDeps,
  pool: PoolDoc,
  plan: Plan,
  created: string[],
  now: number,
  wanted: number,
): Promise<void> {
  const name = pool.metadata.name;
  const at = new Date(now).toISOString();
  const keep = deps.config.maxEvents;
  const entries = spreadOf(pool.spec);
  for (const [i, member] of created.entries()) {
    const entry = plan.creates[i]?.entry ?? entries[0];
    const message = `created member ${member} on ${entry?.provider ?? '?'} (${plan.live + i + 1} live, ${wanted} wanted)`;
    await deps.pools.addEvent(name, { at, type: 'Normal', reason: 'MemberCreated', message }, keep);
    await deps.proxies.addEvent(
      member,
      { at, type: 'Normal', reason: 'Accepted', message: `created by pool ${name}` },
      keep,
    );
  }
  for (const { name: member, reason } of plan.drains) {
    const message = `draining member ${member} (${reason}); discovery no longer hands it out`;
    await deps.pools.addEvent(name, { at, type: 'Normal', reason: 'MemberDrained', message }, keep);
    await deps.proxies.addEvent(
      member,
      { at, type: 'Normal', reason: 'DeletionRequested', message: `pool ${name}: ${reason}` },
      keep,
    );
  }
  const before = new Map(pool.status.entries.map((e) => [`${e.provider}/${JSON.stringify(e.placement)}`, e.available]));
  for (const e of plan.entries) {
    const was = before.get(`${e.provider}/${JSON.stringify(e.placement)}`) ?? true;
    if (was === e.available) continue;
    const event = e.available
      ? {
          type: 'Normal' as const,
          reason: 'EntryRecovered',
          message: `${e.provider} is available again; its share moves back`,
        }
      : {
          type: 'Warning' as const,
          reason: 'EntryUnavailable',
          message: `${e.message ?? e.provider}; its share moves to the other entries`,
        };
    await deps.pools.addEvent(name, { at, ...event }, keep);
  }
}
