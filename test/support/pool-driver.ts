/**
 * Drives pools on the emulators as the deployed functions would, with parallel workers: two
 * pool reconciles of the same pool at once (redelivered kicks, two check instances) and checks of
 * every member, in a loop; and a sampler of the pool's Ready members every 250 ms.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { POOL_LABEL } from '../../shared/domain/pool.js';
import type { ProxyDoc } from '../../shared/domain/status.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { reconcilePool, type PoolDeps } from '../../shared/pools/reconcile.js';
import { FirestorePoolRepository } from '../../shared/store/firestore/pools.js';
import type { RelayHarness } from './relay-harness.js';

/** What the check function runs pools with, on a relay harness's stores and providers. */
export function poolCheckDeps(h: RelayHarness): CheckDeps & { pools: FirestorePoolRepository } {
  const { config, proxies, registry, logger, bus, providerStatus } = h;
  return { config, proxies, registry, logger, bus, providerStatus, pools: new FirestorePoolRepository(h.db, h.logger) };
}

/** Members that serve: Ready and not being drained (what discovery hands out). */
export const readyMembers = (members: ProxyDoc[]) =>
  members.filter((m) => m.status.phase === 'Ready' && !m.deletionRequestedAt).length;

export interface PoolDriver {
  /** Pool reconciles that failed (transaction contention beyond the client's retries): redelivered. */
  failures: number;
  stop(): Promise<void>;
}

/**
 * @param clock - the pool controller's clock (a test moves it forward to make members due for maxAge)
 */
export function drivePool(
  deps: CheckDeps & { pools: FirestorePoolRepository },
  pool: string,
  clock: () => number = Date.now,
): PoolDriver {
  let running = true;
  const driver = { failures: 0, stop: async () => {} };
  const poolDeps: PoolDeps = { ...deps, now: clock, kick: () => Promise.resolve() };
  const reconciler = async () => {
    while (running) {
      await reconcilePool(poolDeps, pool).catch(() => driver.failures++);
      await sleep(150);
    }
  };
  const checker = async () => {
    while (running) {
      const names = (await deps.pools.members(pool)).map((m) => m.metadata.name);
      if (names.length > 0) await runCheck(deps, { names }).catch(() => undefined);
      await sleep(200);
    }
  };
  const loops = [reconciler(), reconciler(), checker()];
  driver.stop = async () => {
    running = false;
    await Promise.all(loops);
  };
  return driver;
}

/**
 * Live members that serve, or whose last probe only timed out: a probe that times out because the
 * machine stalled (several at once under a loaded `npm test`) takes a member out of Ready until the
 * next probe passes, and no rollout can keep a member's probe from timing out. A member whose probe
 * is refused or reset (its process stopped) counts as down, as does every other phase.
 */
export const servingMembers = (members: ProxyDoc[]) =>
  members.filter(
    (m) =>
      !m.deletionRequestedAt &&
      (m.status.phase === 'Ready' ||
        (m.status.phase === 'Unhealthy' &&
          /timed out/.test(m.status.conditions.find((c) => c.type === 'Healthy')?.message ?? ''))),
  ).length;

export interface Sampler {
  /**
   * `serving`: as `servingMembers` counts; `live`: members not being drained; `members`: all of
   * them, drained ones still being deleted included.
   */
  samples: { at: number; ready: number; serving: number; live: number; members: number }[];
  stop(): Promise<void>;
}

/** Samples the pool's Ready, live and all members every `everyMs`. */
export function samplePool(pools: FirestorePoolRepository, pool: string, everyMs = 250): Sampler {
  let running = true;
  const sampler: Sampler = { samples: [], stop: async () => {} };
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      const members = await pools.members(pool);
      const mine = members.filter((m) => m.metadata.labels[POOL_LABEL] === pool);
      const live = mine.filter((m) => !m.deletionRequestedAt);
      const counts = { ready: readyMembers(mine), serving: servingMembers(mine) };
      sampler.samples.push({ at: started, ...counts, live: live.length, members: mine.length });
      await sleep(Math.max(0, everyMs - (Date.now() - started)));
    }
  })();
  sampler.stop = async () => {
    running = false;
    await loop;
  };
  return sampler;
}
