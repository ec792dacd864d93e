/**
 * Orchestration overhead on the emulators with the `process` provider, each trial beside the floor
 * of the same stack: a bare publish → push → Firestore write round trip, measured just before it.
 * All times are wall-clock on this machine: publish start, the command's `issuedAt` (the provider's
 * create call), the relay backend's create returning (reachable), and Firestore's update time of
 * the write that made the proxy Ready.
 */
import { randomBytes } from 'node:crypto';
import { Firestore } from '@google-cloud/firestore';
import { z } from 'zod';
import { instanceName } from '../shared/domain/names.js';
import { LOCAL_DEFAULT_CONFIG } from '../shared/config/local-default.js';
import type { Artifacts } from './artifacts.js';
import type { Cleanup } from './cleanup.js';
import { FLOOR_TOPIC, startOrchestrationStack, type OrchestrationStack } from './orchestration-stack.js';
import { rollPool, type PoolRoll } from './orchestration-pool.js';
import { median } from './stats.js';
import { whenDoc } from './when-doc.js';

export interface OrchestrationTrial {
  floorMs: number;
  publishToCreateMs: number;
  reachableToReadyMs: number;
}

const phaseOf = z.object({ status: z.object({ phase: z.string() }) });
const commandOf = z.object({ issuedAt: z.number(), kind: z.string() });
const RELAY = LOCAL_DEFAULT_CONFIG.providers[0]?.relay ?? 'local';
const PROVIDER = LOCAL_DEFAULT_CONFIG.providers[0]?.name ?? 'local';

/** One bare round trip: publish → push → the floor function's Firestore write. */
async function floorOnce(stack: OrchestrationStack, db: Firestore): Promise<number> {
  const id = randomBytes(6).toString('hex');
  const written = whenDoc(db, `floor/${id}`, (_d, exists) => exists, 30_000);
  const started = Date.now();
  await stack.pubsub.topic(FLOOR_TOPIC).publishMessage({ json: { id } });
  return (await written) - started;
}

const request = (name: string, action: 'apply' | 'delete') => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action,
  metadata: { name, labels: {} },
  ...(action === 'apply' ? { spec: { provider: PROVIDER, placement: {}, port: 0 } } : {}),
});

/** Applies one proxy, waits for Ready, reads the timestamps, then deletes it and waits until it is gone. */
async function trial(
  stack: OrchestrationStack,
  db: Firestore,
  name: string,
): Promise<Omit<OrchestrationTrial, 'floorMs'>> {
  const iname = instanceName(LOCAL_DEFAULT_CONFIG.installationId, name);
  const ready = whenDoc(db, `proxies/${name}`, (d) => phaseOf.safeParse(d).data?.status.phase === 'Ready', 60_000);
  const published = Date.now();
  await stack.pubsub.topic('proxy-requests').publishMessage({ json: request(name, 'apply') });
  const readyAt = await ready;
  const command = commandOf.parse((await db.doc(`relays/${RELAY}/commands/${iname}`).get()).data());
  const reachable = stack.reachableAt.get(iname);
  if (reachable === undefined) throw new Error(`${name}: the relay never reported its instance reachable`);
  const gone = whenDoc(db, `proxies/${name}`, (_d, exists) => !exists, 60_000);
  await stack.pubsub.topic('proxy-requests').publishMessage({ json: request(name, 'delete') });
  await gone;
  return { publishToCreateMs: command.issuedAt - published, reachableToReadyMs: readyAt - reachable };
}

/**
 * @param trials - measured trials (one more runs first, unmeasured, to warm the function processes),
 *   then the pool phase (`rollPool`) on the same stack
 */
export async function runOrchestration(
  artifacts: Artifacts,
  emulators: { firestoreHost: string; pubsubHost: string },
  logDir: string,
  trials: number,
  cleanup: Cleanup,
): Promise<{
  trials: OrchestrationTrial[];
  responses: Record<string, Record<string, number>>;
  /** The pool phase after the trials, or why it failed (the trials stand either way). */
  pool: PoolRoll | { error: string };
}> {
  const project = `bench-orch-${randomBytes(3).toString('hex')}`;
  // The stack registers its own stop with `cleanup`: an interrupted run stops the functions and
  // the relay's detached proxy processes.
  const stack = await startOrchestrationStack(artifacts, emulators, project, logDir, cleanup);
  const db = new Firestore({ projectId: project });
  try {
    await floorOnce(stack, db);
    await trial(stack, db, 'warm-up');
    const results: OrchestrationTrial[] = [];
    for (let i = 0; i < trials; i++) {
      const floors: number[] = [];
      for (let j = 0; j < 5; j++) floors.push(await floorOnce(stack, db));
      const t = await trial(stack, db, `o-${i}`);
      results.push({ floorMs: median(floors), ...t });
    }
    const pool = await rollPool(stack, db, PROVIDER).catch((err: unknown) => ({
      error: err instanceof Error ? err.message : String(err),
    }));
    return { trials: results, responses: stack.responses(), pool };
  } finally {
    await db.terminate();
    await stack.stop();
  }
}
