/**
 * Fleets that follow demand, measured on the stack `npm start` runs (process backend,
 * real tinyproxy members, the functions and emulators) through a real `egress gateway` process:
 *
 * - wake: the first request for a pool at zero, its first byte against the pool's own create →
 *   Ready time: a pool of one applied by hand (the API's PUT sent → its member Ready), the same
 *   control plane hops without the gateway; the woken member's own create → Ready beside it;
 * - trace: one demand trace (an hour compressed: idle, base, a burst of 10× the base, base, idle) replayed side by
 *   side against an autoscaled pool and a fixed pool sized for the peak: member-seconds, answers,
 *   and the reaction to the step from base to burst;
 * - cost: reporters and the controller in this process with counted clients (bench/demand-cost.ts),
 *   during the trace.
 */
import { randomBytes } from 'node:crypto';
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { DEMAND_INTERVAL_MS } from '../gateway/demand.js';
import { parseConfig } from '../shared/config/load.js';
import { autoscaleSchema } from '../shared/domain/autoscale.js';
import { parseDuration } from '../shared/domain/duration.js';
import { LOCAL_DEFAULT_CONFIG } from '../shared/config/local-default.js';
import { startCliGateway } from '../test/e2e/gateway/clients.js';
import { startLocalStack, type RunningStack } from '../test/e2e/stack.js';
import type { Cleanup } from './cleanup.js';
import { measureDemandCost, type DemandCost } from './demand-cost.js';
import {
  get,
  memberSeconds,
  phaseStart,
  poolClient,
  replay,
  startSlowTarget,
  stepReaction,
  watchMembers,
  watchPool,
  type Answers,
  type Phase,
} from './demand-trace.js';

/** The configuration `npm start` runs with (its autoscale interval). */
const STACK_CONFIG = parseConfig(structuredClone(LOCAL_DEFAULT_CONFIG));
/** The local stack's ports are 8080… plus this (EGRESS_PORT_OFFSET overrides it). */
const DEFAULT_PORT_OFFSET = 1500;
/** Requests the trace keeps in flight at base; the burst is 10× the base. */
const BASE = 1;
/** In-flight requests per Ready member the autoscaled pool aims at. */
const PER_MEMBER = 2;
/** Members the peak needs: the fixed pool's size. */
export const PEAK_MEMBERS = Math.ceil((10 * BASE) / PER_MEMBER);
/** How long the target holds each trace request (so it stays in flight). */
const DELAY_MS = 200;
/** The gateway's default `--wake-timeout` (gateway/scopes.ts), and the client's bound beyond it. */
const WAKE_TIMEOUT_MS = 120_000;
const CLIENT_TIMEOUT_MS = WAKE_TIMEOUT_MS + 10_000;

/** The trace's phases and the autoscaler's windows, compressed (an hour to a few minutes). */
export interface TraceShape {
  phases: Phase[];
  scaleDownAfter: string;
  scaleToZeroAfter: string;
}

/** The trace's hour, in minutes, in the order with a short base first (for the step up to the burst). */
const HOUR: readonly [string, number, number][] = [
  ['idle', 13, 0],
  ['base', 7, BASE],
  ['burst', 10, 10 * BASE],
  ['steady', 17, BASE],
  ['idle-after', 13, 0],
];

/**
 * The hour compressed into 180 s (90 s with `--quick`), and the pool's windows compressed alike
 * from their defaults (shared/domain/autoscale.ts: scaleDownAfter 5m, scaleToZeroAfter 10m).
 */
export function traceShape(quick: boolean): TraceShape {
  const seconds = quick ? 90 : 180;
  const factor = 3600 / seconds;
  const defaults = autoscaleSchema.parse({ minReplicas: 0, maxReplicas: 1, target: { inFlightPerMember: 1 } });
  const compressed = (d: string) => `${Math.round((parseDuration(d) ?? 0) / factor)}ms`;
  return {
    phases: HOUR.map(([name, minutes, concurrency]) => ({ name, seconds: (minutes * 60) / factor, concurrency })),
    scaleDownAfter: compressed(defaults.scaleDownAfter),
    scaleToZeroAfter: compressed(defaults.scaleToZeroAfter),
  };
}

export interface WakeRound {
  /** Sending the first request → its first byte. */
  firstByteMs: number;
  /** A pool of one applied by hand: the apply sent → its member Ready (the pool's own create → Ready). */
  poolCreateToReadyMs: number;
  /** The member that served the woken request: its document created → Ready. */
  createToReadyMs: number;
}

export interface DemandResults {
  wake: WakeRound[];
  trace: {
    shape: TraceShape;
    seconds: number;
    autoscaled: { memberSeconds: number; answers: Answers };
    fixed: { memberSeconds: number; answers: Answers };
    /** The autoscaled pool's members in ms from the trace's start (created, Ready, gone), for reading the figures. */
    autoscaledMembers: { createdAt: number; readyAt?: number; goneAt?: number }[];
    /** The fixed pool's size, sized for the nominal peak. */
    fixedMembers: number;
    /** From the step base → burst: the autoscaler's decision for the peak, and the peak Ready. */
    stepUp: ReturnType<typeof stepReaction>;
  };
  /** Report and autoscale intervals of the stack (seconds), for the step-up target. */
  intervals: { report: number; autoscale: number };
  cost?: DemandCost;
  /** Why the cost part has no figures, when it failed. */
  costError?: string;
}

const poolView = z.object({
  status: z.object({ readyReplicas: z.number().default(0) }),
});

/** The stack's API as its admin: PUT a pool, GET its view. */
function api(stack: RunningStack) {
  const env = stack.localEnv();
  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${env['EGRESS_API_URL']}${path}`, {
      method,
      headers: { authorization: `Bearer ${env['EGRESS_TOKEN']}`, 'content-type': 'application/json' },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    // A pool applied a moment ago is not stored yet: the requests function takes it from Pub/Sub.
    if (res.status === 404 && method === 'GET') return undefined;
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
    return JSON.parse(text) as unknown;
  };
  return {
    apply: (name: string, spec: Record<string, unknown>) =>
      call('PUT', `/v1/pools/${name}`, {
        apiVersion: 'egress.dev/v1',
        kind: 'ProxyPool',
        metadata: { name },
        spec: { ...spec, template: { spec: { provider: 'local' } } },
      }),
    /** The pool's view, or undefined while it is not stored. */
    pool: async (name: string) => {
      const body = await call('GET', `/v1/pools/${name}`);
      return body === undefined ? undefined : poolView.parse(body);
    },
    providers: async () =>
      z
        .object({ items: z.array(z.object({ name: z.string(), status: z.string() })) })
        .parse(await call('GET', '/v1/providers')).items,
  };
}

async function until(what: string, timeoutMs: number, test: () => Promise<boolean>): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !(await test()); await sleep(500))
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs / 1000} s`);
}

/**
 * One run on one stack, in the order its parts depend on (pools up, the wake rounds on a quiet
 * stack, then the trace with the cost measure beside it); each thing it starts is registered with
 * `cleanup` as it starts.
 *
 * @param opts.quick - half the trace (its windows halved too), two wake rounds, a shorter cost window
 */
export async function runDemandBench(
  opts: { quick: boolean; logDir: string; log: (m: string) => void },
  cleanup: Cleanup,
): Promise<DemandResults> {
  const { log } = opts;
  const offset = process.env['EGRESS_PORT_OFFSET'] ?? String(DEFAULT_PORT_OFFSET);
  log(`demand: starting the local stack (npm start, EGRESS_PORT_OFFSET ${offset})`);
  const stack = await startLocalStack({ EGRESS_PORT_OFFSET: offset, EGRESS_SAMPLES: 'none' });
  const stopStack = cleanup.add(async () => {
    if (stack.process.exitCode === null) await stack.interrupt();
    await Promise.all([stack.db.terminate(), stack.pubsub.close()]);
    // The stack's logs stay with the bench's (its functions', the relay's, the emulators').
    const logs = join(stack.home, 'logs');
    if (existsSync(logs)) cpSync(logs, join(opts.logDir, 'demand-stack-logs'), { recursive: true });
    rmSync(stack.home, { recursive: true, force: true });
  });
  try {
    const egress = api(stack);
    // Until the relay's first report `local` is Unhealthy: a pool applied then waits out a recovery.
    await until('provider local Healthy', 60_000, async () =>
      (await egress.providers()).some((p) => p.name === 'local' && p.status === 'Healthy'),
    );
    const target = await startSlowTarget();
    const stopTarget = cleanup.add(() => target.close());
    const gateway = await startCliGateway(stack.home, ['--listen', '127.0.0.1:0', '--metrics', '127.0.0.1:0']);
    const stopGateway = cleanup.add(async () => {
      await gateway.stop();
      writeFileSync(join(opts.logDir, 'demand-gateway.log'), gateway.output());
    });
    const members = watchMembers(stack.db);
    const autoPool = watchPool(stack.db, 'traceauto');
    const shape = traceShape(opts.quick);
    const rounds = opts.quick ? 2 : 3;
    try {
      // Pool names without '-': the username grammar splits `<user>-pool-<name>` on it.
      const sleeping = { minReplicas: 0, maxReplicas: 1, target: { inFlightPerMember: 1 }, scaleToZeroAfter: '10m' };
      for (let i = 1; i <= rounds; i++) await egress.apply(`wake${i}`, { autoscale: sleeping });
      await egress.apply('tracefixed', { replicas: PEAK_MEMBERS });
      await egress.apply('traceauto', {
        autoscale: {
          minReplicas: 0,
          maxReplicas: 2 * PEAK_MEMBERS,
          target: { inFlightPerMember: PER_MEMBER },
          scaleUpStabilization: '0s',
          scaleDownAfter: shape.scaleDownAfter,
          scaleToZeroAfter: shape.scaleToZeroAfter,
        },
      });
      log(`demand: waiting for the fixed pool's ${PEAK_MEMBERS} members to be Ready`);
      const ready = async (name: string, n: number) => ((await egress.pool(name))?.status.readyReplicas ?? 0) >= n;
      await until('the fixed pool Ready', 180_000, () => ready('tracefixed', PEAK_MEMBERS));
      const wake: WakeRound[] = [];
      for (let i = 1; i <= rounds; i++) {
        const pool = `wake${i}`;
        const sent = Date.now();
        const answer = await get(poolClient(gateway.url, pool), target.url(0), undefined, CLIENT_TIMEOUT_MS);
        if (answer.status !== 200) throw new Error(`wake ${pool}: answered ${answer.status} ${answer.error ?? ''}`);
        const member = () => [...members.lives.values()].find((l) => l.pool === pool && l.readyAt !== undefined);
        await until(`${pool}'s member seen Ready`, 10_000, () => Promise.resolve(member() !== undefined));
        const m = member();
        if (m?.readyAt === undefined) throw new Error(`wake ${pool}: no Ready member`);
        const byHand = `cold${i}`;
        const applied = Date.now();
        await egress.apply(byHand, { replicas: 1 });
        const coldMember = () => [...members.lives.values()].find((l) => l.pool === byHand && l.readyAt !== undefined);
        await until(`${byHand}'s member Ready`, 60_000, () => Promise.resolve(coldMember() !== undefined));
        const poolCreateToReadyMs = (coldMember()?.readyAt ?? applied) - applied;
        await egress.apply(byHand, { replicas: 0 });
        wake.push({
          firstByteMs: answer.firstByteAt - sent,
          poolCreateToReadyMs,
          createToReadyMs: m.readyAt - m.createdAt,
        });
        log(
          `demand: wake ${pool}: first byte ${wake.at(-1)?.firstByteMs} ms (request → member created ${m.createdAt - sent} ms, created → Ready ${m.readyAt - m.createdAt} ms, Ready → first byte ${answer.firstByteAt - m.readyAt} ms); ${byHand} applied → Ready ${poolCreateToReadyMs} ms`,
        );
      }

      const seconds = shape.phases.reduce((s, p) => s + p.seconds, 0);
      log(`demand: replaying a ${seconds}-s trace against traceauto and tracefixed, the cost measure beside it`);
      const startAt = Date.now() + 1000;
      const drive = (pool: string) =>
        replay(poolClient(gateway.url, pool), target.url, shape.phases, startAt, {
          delayMs: DELAY_MS,
          timeoutMs: CLIENT_TIMEOUT_MS,
        });
      const costRun = measureDemandCost({
        // A project of its own on the stack's emulator: the stack's controller does not look at its pools.
        project: `bench-demand-${randomBytes(3).toString('hex')}`,
        gateways: opts.quick ? 4 : 8,
        warmupMs: 15_000,
        intervals: opts.quick ? 6 : 12,
        logFile: join(opts.logDir, 'demand-cost.log'),
      }).then(
        (cost) => ({ cost }),
        (err: unknown) => ({ costError: err instanceof Error ? err.message : String(err) }),
      );
      const [auto, fixed] = await Promise.all([drive('traceauto'), drive('tracefixed')]);
      const endAt = startAt + seconds * 1000;
      const step = startAt + phaseStart(shape.phases, 'burst');
      const result: DemandResults = {
        wake,
        trace: {
          shape,
          seconds,
          autoscaled: {
            memberSeconds: memberSeconds(members.lives.values(), 'traceauto', startAt, endAt),
            answers: auto,
          },
          fixed: {
            memberSeconds: memberSeconds(members.lives.values(), 'tracefixed', startAt, endAt),
            answers: fixed,
          },
          autoscaledMembers: [...members.lives.values()]
            .filter((l) => l.pool === 'traceauto')
            .map((l) => ({
              createdAt: l.createdAt - startAt,
              ...optional('readyAt', l.readyAt === undefined ? undefined : l.readyAt - startAt),
              ...optional('goneAt', l.goneAt === undefined ? undefined : l.goneAt - startAt),
            })),
          fixedMembers: PEAK_MEMBERS,
          // The burst ends where the steady phase starts.
          stepUp: stepReaction(autoPool.samples, step, startAt + phaseStart(shape.phases, 'steady')),
        },
        intervals: { report: DEMAND_INTERVAL_MS / 1000, autoscale: STACK_CONFIG.autoscaleIntervalSeconds },
        ...(await costRun),
      };
      return result;
    } finally {
      members.close();
      autoPool.close();
      await stopGateway();
      await stopTarget();
    }
  } finally {
    await stopStack();
  }
}

const optional = <K extends string>(key: K, value: number | undefined) =>
  (value === undefined ? {} : { [key]: value }) as Partial<Record<K, number>>;
