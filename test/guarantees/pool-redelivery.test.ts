/**
 * Pools under redelivery and reordering: seeded random sequences of pool applies (replicas 0–3,
 * template changes) and deletes, every request delivered 1–3 times in random order with random
 * delays, through the real request handler, while two pool reconciles per pool race and every
 * member is checked, on a real relay with real proxy processes. Each pool must converge to its
 * last request: exactly `replicas` Ready members made from the last template, or no pool and no
 * member; and no instance leaked on the relay.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBody } from '../../shared/bus/message.js';
import { instanceName } from '../../shared/domain/names.js';
import { templateHash, type PoolApplyRequest } from '../../shared/domain/pool.js';
import { TEMPLATE_LABEL } from '../../shared/pools/plan.js';
import type { CheckDeps } from '../../shared/reconcile/check.js';
import { handleRequest, type RequestDeps } from '../../shared/requests.js';
import type { FirestorePoolRepository } from '../../shared/store/firestore/pools.js';
import { eventually } from '../support/eventually.js';
import { drivePool, poolCheckDeps, readyMembers, type PoolDriver } from '../support/pool-driver.js';
import { proxyPorts, startRelayHarness, type RelayHarness } from '../support/relay-harness.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed, type Rng } from './support/prng.js';

const FILE = 'test/guarantees/pool-redelivery.test.ts';
const SEED = suiteSeed(0x5eed0015);
const SCENARIOS = scenarioCount(4, 40);
const rng = mulberry32(SEED);

let h: RelayHarness;
let deps: CheckDeps & { pools: FirestorePoolRepository };
let requests: RequestDeps;
const drivers: PoolDriver[] = [];

type Op = { action: 'apply'; replicas: number; version: number } | { action: 'delete' };

const body = (pool: string, op: Op): PoolApplyRequest | Record<string, unknown> =>
  op.action === 'delete'
    ? { apiVersion: 'egress.dev/v1', kind: 'ProxyPool', action: 'delete', metadata: { name: pool } }
    : {
        apiVersion: 'egress.dev/v1',
        kind: 'ProxyPool',
        action: 'apply',
        metadata: { name: pool, labels: {} },
        spec: {
          replicas: op.replicas,
          minAvailable: Math.max(0, op.replicas - 1),
          maxSurge: 1,
          template: {
            metadata: { labels: { v: String(op.version) } },
            spec: { provider: 'proc', placement: {}, port: 0 },
          },
        },
      };

function generate(r: Rng): Op[] {
  return Array.from({ length: r.int(2, 5) }, (): Op =>
    r.chance(0.2) ? { action: 'delete' } : { action: 'apply', replicas: r.int(0, 3), version: r.int(1, 2) },
  );
}

/** Delivers every op 1–3 times, all copies shuffled, with random pauses; returns the last op. */
async function deliver(r: Rng, pool: string, ops: Op[]): Promise<Op> {
  const t0 = Date.now();
  const copies = ops.flatMap((op, i) => Array.from({ length: r.int(1, 3) }, (_, c) => ({ op, t: t0 + i * 1000, c })));
  for (const { op, t, c } of r.shuffle(copies)) {
    const message = decodeBody(`${pool}-${t}-${c}`, t, {}, JSON.stringify(body(pool, op)));
    await handleRequest(requests, message);
    // A seeded random gap, so deliveries land at varying points of the racing pool reconciles: the
    // scenario's delays (file comment), not a wait for anything.
    await sleep(r.int(0, 400));
  }
  return ops.at(-1) as Op;
}

async function problems(pool: string, last: Op): Promise<string[]> {
  const doc = await deps.pools.get(pool);
  const members = await deps.pools.members(pool);
  if (last.action === 'delete') {
    return [
      ...(doc ? [`pool document still there (deleting: ${String(doc.deletionRequestedAt)})`] : []),
      ...(members.length > 0 ? [`${members.length} members left`] : []),
    ];
  }
  const want = body(pool, last) as PoolApplyRequest;
  const hash = templateHash({ metadata: { labels: { v: String(last.version) } }, spec: want.spec.template.spec });
  const out: string[] = [];
  if (!doc) return ['no pool document'];
  if (doc.spec.replicas !== last.replicas) out.push(`spec.replicas ${doc.spec.replicas}, want ${last.replicas}`);
  if (members.length !== last.replicas) out.push(`${members.length} members, want ${last.replicas}`);
  if (readyMembers(members) !== last.replicas) out.push(`${readyMembers(members)} Ready`);
  const stale = members.filter((m) => m.metadata.labels[TEMPLATE_LABEL] !== hash).length;
  if (stale > 0) out.push(`${stale} members of an older template`);
  return out;
}

/** Instances on the relay for this pool's members (and for nothing else of this pool). */
async function leaked(pool: string): Promise<string[]> {
  const owned = new Set((await deps.pools.members(pool)).map((m) => instanceName('it', m.metadata.name)));
  const items = await h.relays.instances('pool-redelivery');
  return items.map((i) => i.name).filter((n) => n.startsWith(`ep-${pool}-`) && !owned.has(n));
}

beforeAll(async () => {
  h = await startRelayHarness('pool-redelivery', proxyPorts(24460, 15), { unhealthyAfter: 3 });
  deps = poolCheckDeps(h);
  requests = { proxies: h.proxies, bus: h.bus, logger: h.logger, maxEvents: 50, pools: deps.pools, config: h.config };
}, 60_000);
afterAll(async () => {
  await Promise.all(drivers.map((d) => d.stop()));
  await h?.close();
}, 60_000);

describe('pools under redelivery and reordering', () => {
  it(`${SCENARIOS} seeded scenarios converge to their last request, none leaked`, async () => {
    const scenarios = Array.from({ length: SCENARIOS }, (_, i) => ({ pool: `g${i}`, r: rng.fork() }));
    const lasts = await Promise.all(
      scenarios.map(async ({ pool, r }) => {
        const ops = generate(r);
        drivers.push(drivePool(deps, pool));
        return { pool, ops, last: await deliver(r, pool, ops) };
      }),
    );
    for (const { pool, ops, last } of lasts) {
      const hint = `${pool}: ${JSON.stringify(ops)}; ${replayHint(FILE, SEED, SCENARIOS)}`;
      await eventually(async () => expect(await problems(pool, last), hint).toEqual([]), 120_000, 1000);
      await eventually(async () => expect(await leaked(pool), hint).toEqual([]), 60_000, 1000);
    }
  }, 300_000);
});
