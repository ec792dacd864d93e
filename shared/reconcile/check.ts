/** The check function's work: a sweep page (fanning out the next page first) or a batch of named proxies. */
import { z } from 'zod';
import type { BusMessage } from '../bus/message.js';
import type { Bus } from '../bus/pubsub.js';
import { dnsLabel } from '../domain/names.js';
import { toValidationError } from '../domain/proxy.js';
import { ValidationError } from '../errors.js';
import { reconcilePool } from '../pools/reconcile.js';
import type { DemandRepository, PoolRepository, StoredProxy } from '../store/ports.js';
import { inSpan } from '../telemetry/spans.js';
import { knownHealth, newCheckBatch, providerHealth, type CheckBatch } from './batch.js';
import { followUpKey, holdUntilDue, publishFollowUps, type FollowUpLedger, type Recheck } from './follow-up.js';
import type { ReconcileDeps, ReconcileOptions, ReconcileResult } from './context.js';
import { reconcileProxy } from './reconcile.js';
import type { SweepCache } from './sweep-cache.js';
import { TOPICS } from '../bus/topics.js';
import { kickChecks, kickPools } from './kick.js';
import type { Logger } from '../logger.js';

/** A follow-up's time (epoch ms): the check waits until then (see `follow-up.ts`). */
const dueAt = z.number().int().nonnegative().optional();

/** A check message: a sweep page (from the scheduler, then chained) or explicit names (kicks). */
/** Provider verdicts a sweep page read, passed on to the next page (read at `at`, epoch ms). */
const sweepHealth = z.strictObject({
  at: z.number().int().nonnegative(),
  providers: z.record(
    z.string().max(63),
    z.strictObject({ ok: z.boolean(), message: z.string().max(500), latencyMs: z.number().nonnegative() }),
  ),
});

export const checkMessageSchema = z.union([
  z.strictObject({
    sweep: z.literal(true),
    after: z.string().max(63).nullable().optional(),
    health: sweepHealth.optional(),
  }),
  z.strictObject({ names: z.array(dnsLabel).min(1).max(500), verifyEgress: z.boolean().optional(), dueAt }),
  /** Pools to reconcile (after a pool request, a member's phase change, or a sweep). */
  z.strictObject({ pools: z.array(dnsLabel).min(1).max(100), dueAt }),
]);
export type CheckMessage = z.infer<typeof checkMessageSchema>;

/** Parses a check message, naming the field on failure. */
export function parseCheckMessage(input: unknown): CheckMessage {
  const parsed = checkMessageSchema.safeParse(input);
  if (!parsed.success) throw toValidationError(parsed.error);
  return parsed.data;
}

export interface CheckDeps extends ReconcileDeps {
  bus: Bus;
  /** The pools' store; without it pool kicks are acknowledged and nothing else is done for pools. */
  pools?: PoolRepository;
  /** The gateways' demand reports, for autoscaled pools. */
  demand?: DemandRepository;
  /** How a follow-up waits for its `dueAt` (tests pass one that advances their clock). */
  wait?: (ms: number) => Promise<unknown>;
  /** This instance's cache of sweep pages (kept across messages); without it every page is read whole. */
  sweepCache?: SweepCache;
  /** This instance's follow-ups on their way (kept across messages); without it chains never merge. */
  followUps?: FollowUpLedger;
}

/** Runs `fn` over `items` with at most `limit` in flight. */
async function pool<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i] as T);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return results;
}

/**
 * Handles one check message.
 *
 * A sweep reads one page of proxies (one read each; with a warm `sweepCache`, only what changed
 * in the page since this instance last read it: sweep-cache.ts), publishes the next page's message *before*
 * reconciling so pages proceed in parallel, then reconciles its page: one invocation and one read
 * per proxy per cycle. Settled relay-backed proxies are confirmed from their stored status, without
 * reading the relay's inventory (`reuseObservation`); their changes arrive as kicks.
 *
 * @returns the results, and the proxies or pools that asked for another look soon (explicit names
 * and pools only: a sweep asks for none, the next sweep is its retry)
 */
export async function runCheck(
  deps: CheckDeps,
  message: CheckMessage,
): Promise<{ results: ReconcileResult[]; rechecks: Recheck[] }> {
  if ('pools' in message) return runPools(deps, message.pools);
  if ('sweep' in message) return runSweepPage(deps, message);
  const batch = newCheckBatch();
  const results = await pool([...new Set(message.names)], 10, async (name) => {
    const stored = await deps.proxies.get(name);
    return stored ? reconcileTraced(deps, stored, batch, { verifyEgress: message.verifyEgress === true }) : undefined;
  });
  const done = results.filter((r): r is ReconcileResult => r !== undefined);
  await kickEgressChecks(deps.bus, done);
  await kickPools(
    deps.bus,
    done.flatMap((r) => (r.pool ? [r.pool] : [])),
  );
  const rechecks = done.flatMap((r): Recheck[] =>
    r.recheckAfterMs !== undefined ? [{ kind: 'names', name: r.name, afterMs: r.recheckAfterMs }] : [],
  );
  return { results: done, rechecks };
}

/** One sweep page: read it, pass the chain on (with this page's provider verdicts), reconcile it. */
async function runSweepPage(
  deps: CheckDeps,
  message: Extract<CheckMessage, { sweep: true }>,
): Promise<{ results: ReconcileResult[]; rechecks: Recheck[] }> {
  const now = (deps.now ?? Date.now)();
  const passed = message.health;
  // Verdicts the previous page read are as good as a read now while younger than a health run.
  const fresh = passed && now - passed.at < deps.config.healthIntervalSeconds * 1000 ? passed : undefined;
  const batch = newCheckBatch(fresh?.providers);
  const after = message.after ?? null;
  const limit = deps.config.checkBatchSize;
  const page = deps.sweepCache
    ? await deps.sweepCache.page(deps.proxies, after, limit, deps.logger)
    : await deps.proxies.page(after, limit);
  if (page.next) {
    // This page's providers' verdicts go on with the chain: one read per provider per sweep.
    for (const { doc } of page.items) {
      const provider = deps.registry.get(doc.spec.provider);
      if (provider) void providerHealth(batch, deps, provider).catch(() => undefined);
    }
    const health = { at: fresh?.at ?? now, providers: await knownHealth(batch) };
    await deps.bus.publish(TOPICS.proxyChecks, { sweep: true, after: page.next, health });
  }
  // The first page of a sweep also looks at every pool (a lost kick is found here).
  if (!message.after && deps.pools) await kickPools(deps.bus, await deps.pools.names());
  // The next page is already on its way: a failure here must not redeliver (and fork) the chain.
  const results = await pool(page.items, 10, (stored) =>
    reconcileTraced(deps, stored, batch, { reuseObservation: true }).catch((err: unknown) => {
      deps.logger.warn('reconcile failed; the next sweep retries', { proxy: stored.doc.metadata.name, error: err });
      return undefined;
    }),
  );
  const done = results.filter((r): r is ReconcileResult => r !== undefined);
  await kickEgressChecks(deps.bus, done);
  await kickPools(
    deps.bus,
    done.flatMap((r) => (r.pool ? [r.pool] : [])),
  );
  return { results: done, rechecks: [] };
}

/**
 * The check function's handler: holds a follow-up until its `dueAt` (or passes it on unchanged,
 * `holdUntilDue`), runs the check the message asks for, and publishes follow-ups for what wants
 * another look soon (`follow-up.ts`); an invalid message is logged with its field and acknowledged
 * (`rejected`), never redelivered. Only a failure (a store or bus error) is thrown, and so
 * redelivered: "look again soon" never is.
 */
export async function handleCheckMessage(deps: CheckDeps, message: BusMessage): Promise<'rejected' | 'done'> {
  let check;
  try {
    check = parseCheckMessage(message.json);
  } catch (err) {
    if (!(err instanceof ValidationError)) throw err;
    deps.logger.warn('check message rejected', { messageId: message.id, field: err.field, reason: err.reason });
    return 'rejected';
  }
  const now = deps.now ?? Date.now;
  if ('dueAt' in check && !(await holdUntilDue(check.dueAt, now(), deps.wait))) {
    await deps.bus.publish(TOPICS.proxyChecks, check);
    return 'done';
  }
  arrived(deps.followUps, check);
  await checkAndFollowUp(deps, check);
  return 'done';
}

/** A due follow-up is no longer on its way: the look it runs asks for the next one. */
function arrived(ledger: FollowUpLedger | undefined, check: CheckMessage): void {
  if (!ledger || !('dueAt' in check) || check.dueAt === undefined) return;
  const verify = 'verifyEgress' in check && check.verifyEgress === true;
  const [kind, names] = 'names' in check ? (['names', check.names] as const) : (['pools', check.pools] as const);
  for (const name of names) ledger.arrived(followUpKey(kind, name, verify), check.dueAt);
}

/** Runs a check, then publishes the follow-ups of what wants another look soon (`follow-up.ts`). */
export async function checkAndFollowUp(deps: CheckDeps, check: CheckMessage): Promise<ReconcileResult[]> {
  const { results, rechecks } = await runCheck(deps, check);
  const verifyEgress = 'verifyEgress' in check && check.verifyEgress === true;
  await publishFollowUps(deps.bus, rechecks, (deps.now ?? Date.now)(), { verifyEgress }, deps.followUps);
  return results;
}

/** One proxy's reconcile as a span `reconcile` carrying the proxy, the decision and the resulting phase. */
function reconcileTraced(
  deps: CheckDeps,
  stored: StoredProxy,
  batch: CheckBatch,
  options?: ReconcileOptions,
): Promise<ReconcileResult> {
  const { doc } = stored;
  const attributes = { 'proxy.name': doc.metadata.name, 'proxy.generation': doc.generation };
  return inSpan('reconcile', { attributes }, async (span) => {
    const result = await reconcileProxy(deps, stored, batch, options);
    span.setAttributes({ 'proxy.phase': result.phase, 'egress.action': result.action });
    if (result.recheckAfterMs !== undefined) span.setAttribute('egress.recheck_after_ms', result.recheckAfterMs);
    return result;
  });
}

/** Peers found sharing an egress IP verify theirs too, so both sides are flagged. */
async function kickEgressChecks(bus: Bus, results: ReconcileResult[]): Promise<void> {
  const names = [...new Set(results.flatMap((r) => r.verifyEgressOf ?? []))];
  if (names.length > 0) await kickChecks(bus, names, { verifyEgress: true });
}

/** Reconciles the named pools; members they create or drain are kicked. */
async function runPools(
  deps: CheckDeps,
  names: string[],
): Promise<{ results: ReconcileResult[]; rechecks: Recheck[] }> {
  const { pools } = deps;
  if (!pools) return { results: [], rechecks: [] };
  const rechecks: Recheck[] = [];
  for (const name of new Set(names)) {
    const result = await inSpan('reconcile-pool', { attributes: { 'pool.name': name } }, () =>
      reconcilePool({ ...deps, pools, kick: (members) => kickChecks(deps.bus, members) }, name),
    );
    if (result.recheckAfterMs !== undefined) rechecks.push({ kind: 'pools', name, afterMs: result.recheckAfterMs });
  }
  return { results: [], rechecks };
}

/** Checks proxies in the calling invocation (`checkAndFollowUp` over the function's runtime). */
export type CheckNow = (names: string[]) => Promise<unknown>;

/**
 * Checks `names` in this invocation when `deps.check` is given (no hop through the `check`
 * function), else — or when that fails: what called it has recorded its change, so it must not be
 * redelivered for this — kicks them to the `check` function.
 */
export async function checkNowOrKick(
  deps: { check?: CheckNow; bus: Bus; logger: Logger },
  names: string[],
): Promise<void> {
  if (deps.check) {
    try {
      await deps.check(names);
      return;
    } catch (err) {
      deps.logger.warn('check in this invocation failed; kicking the check function', { proxies: names, error: err });
    }
  }
  await kickChecks(deps.bus, names);
}
