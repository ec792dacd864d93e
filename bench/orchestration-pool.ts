/**
 * The orchestration bench's pool phase: a pool of `POOL_REPLICAS` comes up, one template change rolls
 * every member (never below `minAvailable`), and the pool is deleted — on the same stack as the
 * trials, so the functions' 5xx tally covers a pool rotation too (the target: no 5xx in a healthy
 * steady state, while proxies provision, during a rollout or a pool rotation).
 */
import type { Firestore } from '@google-cloud/firestore';
import { z } from 'zod';
import type { OrchestrationStack } from './orchestration-stack.js';
import { whenDoc } from './when-doc.js';

export const POOL_REPLICAS = 3;
const POOL = 'bench-pool';

const poolOf = z.object({
  generation: z.number(),
  status: z.object({
    observedGeneration: z.number(),
    replicas: z.number(),
    readyReplicas: z.number(),
    updatedReplicas: z.number(),
    terminating: z.number(),
  }),
});

/** The wall times of the pool phase (ms). */
export interface PoolRoll {
  upMs: number;
  rollMs: number;
  deleteMs: number;
}

const poolRequest = (provider: string, action: 'apply' | 'delete', revision: string) => ({
  apiVersion: 'egress.dev/v1',
  kind: 'ProxyPool',
  action,
  metadata: { name: POOL, labels: {} },
  ...(action === 'apply'
    ? {
        spec: {
          replicas: POOL_REPLICAS,
          minAvailable: POOL_REPLICAS - 1,
          template: { metadata: { labels: { revision } }, spec: { provider, placement: {}, port: 0 } },
        },
      }
    : {}),
});

/** Resolves once `pools/{POOL}` satisfies `test` (or is gone, when `test` is undefined); rejects after `timeoutMs`. */
async function whenPool(db: Firestore, test: ((p: z.infer<typeof poolOf>) => boolean) | undefined, timeoutMs: number) {
  await whenDoc(
    db,
    `pools/${POOL}`,
    (data, exists) => {
      if (!test) return !exists;
      const parsed = poolOf.safeParse(data);
      return parsed.success && test(parsed.data);
    },
    timeoutMs,
  );
}

/** Every member Ready and made from generation `g`'s template, none left draining. */
const settledAt = (g: number) => (p: z.infer<typeof poolOf>) =>
  p.generation === g &&
  p.status.observedGeneration === g &&
  p.status.replicas === POOL_REPLICAS &&
  p.status.readyReplicas === POOL_REPLICAS &&
  p.status.updatedReplicas === POOL_REPLICAS &&
  p.status.terminating === 0;

/** Applies the pool, waits for it to settle, changes its template, waits again, deletes it. */
export async function rollPool(stack: OrchestrationStack, db: Firestore, provider: string): Promise<PoolRoll> {
  const publish = (action: 'apply' | 'delete', revision: string) =>
    stack.pubsub.topic('proxy-requests').publishMessage({ json: poolRequest(provider, action, revision) });
  const step = async (action: 'apply' | 'delete', revision: string, done: Promise<void>) => {
    const started = Date.now();
    await publish(action, revision);
    await done;
    return Date.now() - started;
  };
  const upMs = await step('apply', '1', whenPool(db, settledAt(1), 120_000));
  const rollMs = await step('apply', '2', whenPool(db, settledAt(2), 180_000));
  const deleteMs = await step('delete', '2', whenPool(db, undefined, 120_000));
  return { upMs, rollMs, deleteMs };
}
