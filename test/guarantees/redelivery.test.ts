/**
 * Redelivery and reordering: hundreds of seeded random scenarios of applies, spec changes and
 * deletes on overlapping names, every message (requests, check kicks, relay commands, relay
 * reports, sweeps) delivered 1–4 times in random order with random delays, through the real
 * handlers, against each provider type with a world (its kit, test/kits/: a real relay with real
 * proxy processes or libvirt's test driver, the fake Compute and Kubernetes APIs). Each must
 * converge: one instance per existing proxy with the last applied spec, none for a deleted one, no
 * document stuck.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { BusMessage } from '../../shared/bus/message.js';
import type { Bus } from '../../shared/bus/pubsub.js';
import { RetryableError } from '../../shared/errors.js';
import { handleCheckMessage, type CheckDeps } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { handleRequest } from '../../shared/requests.js';
import { Deliveries, deliverRequest, deliveringBus, duplicatingBus, type Handled } from './support/deliveries.js';
import { Figures } from './support/figures.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed, type Rng } from './support/prng.js';
import { describeOps, expectAfter, generateOps, publishTimes, requestBody } from './support/scenarios.js';
import { onTheWire } from './support/deliveries.js';
import { allProblems, settle } from './support/settle.js';
import { iname, startWorld, type Expected, type World } from './support/world.js';
import { proxyPorts } from '../support/relay-harness.js';
import { guaranteeKit, providersUnderTest, type ProviderKind } from '../kits/registry.js';
import { TOPICS } from '../../shared/bus/topics.js';

const FILE = 'test/guarantees/redelivery.test.ts';
const SEED = suiteSeed(0x5eed0001);
/** Scenarios: the full count in the cheapest world (its kit's `fullCounts`), fewer elsewhere (the soak runs many). */
const scenariosIn = (kind: ProviderKind) =>
  guaranteeKit(kind).fullCounts ? scenarioCount(24, 400) : scenarioCount(8, 100);
/** Proxy ports of the process backend; relay ids per provider. */
const PORTS = proxyPorts(25000, 100);
/** Scenarios run this many at once, each lane on its own names (more lanes: more load on the 2 cores). */
const LANES = Number(process.env['GUARANTEE_LANES'] ?? 4);
const POOL = 3;
const KICK_COPIES = Number(process.env['GUARANTEE_KICK_COPIES'] ?? 2);
/**
 * Whether live proxies never stop asking for checks: on libvirt's test driver no guest answers the
 * relay's probe, so a kvm proxy serves as `Unhealthy` (its kit's `servingPhase`), and an Unhealthy
 * proxy asks for another look every 2 s for as long as it lives. Waiting for quiet leaves those
 * kicks out. (Before the check's follow-up ledger merged chains, each duplicated copy of such a
 * follow-up started a chain of its own: 7,440 check deliveries in 220 s, never settled.)
 */
const endlessChecks = (kind: ProviderKind) => guaranteeKit(kind).servingPhase !== 'Ready';
const GC_GRACE_SECONDS = 600;

function redeliverySuite(kind: ProviderKind): void {
  const figures = new Figures('redelivery', SEED, kind);
  const scenarios = scenariosIn(kind);
  const endless = endlessChecks(kind);
  /** Waits until commands, requests, sweeps (and, where they end, kicks) are all handled. */
  const quiet = () => shared.drain(endless ? TOPICS.proxyChecks : undefined);
  const rng = mulberry32(SEED);
  /** Commands, kicks and sweeps: shared by all lanes. */
  const shared = new Deliveries(figures);
  /** Reports never stop coming: apart, so that draining `shared` ends. */
  const reports = new Deliveries(figures);
  /** Kicks of the single-request tests are dropped: `settle` runs the checks. */
  const dropped: Bus = { publish: () => Promise.resolve('dropped') };
  let world: World;
  let sweeping = true;
  let sweeper: Promise<void> | undefined;
  /**
   * Set when the world is about to close: late copies and redeliveries are then acknowledged
   * unhandled. Handled, they would reach a terminated Firestore client, whose rejections surface
   * as unhandled errors while the next provider's world runs (seen in a CI run).
   */
  let closing = false;

  /**
   * The check function's handler. "Check again soon" is a follow-up message through the same bus
   * (delayed, duplicated); a thrown error (a store's contention, say) is a redelivery.
   */
  function checkHandler(deps: () => CheckDeps) {
    return async (message: BusMessage): Promise<Handled> => {
      if (closing) return;
      try {
        await handleCheckMessage(deps(), message);
      } catch (err) {
        if (err instanceof RetryableError) return { redeliverAfterMs: err.retryAfterMs };
        throw err;
      }
    };
  }

  /** A bus delivering check kicks through `deliveries` to the check function. */
  function checkBus(deliveries: Deliveries, busRng: Rng): Bus {
    let deps: CheckDeps | undefined;
    const bus = deliveringBus(
      deliveries,
      busRng,
      { [TOPICS.proxyChecks]: checkHandler(() => (deps ??= world.checkDeps(bus))) },
      KICK_COPIES,
    );
    return bus;
  }

  /**
   * The scheduler's sweep, every 2.5 s, itself delivered 1–2 times. The timer is the scheduler this
   * models (its period is part of the scenario), not a wait for something to happen.
   */
  async function sweepLoop(): Promise<void> {
    const bus = checkBus(shared, rng.fork());
    const handle = checkHandler(() => world.checkDeps(bus));
    while (sweeping) {
      void shared.send(rng, 'sweep', () => handle(onTheWire({ sweep: true })), rng.int(1, 2));
      await sleep(2500);
    }
  }

  /** A sequence of scenarios on one pool of names, each starting from where the previous one ended. */
  async function runLane(lane: number, count: number, expected: Map<string, Expected>): Promise<void> {
    const names = Array.from({ length: POOL }, (_, k) => `rd-${lane}-${'abcdefgh'[k]}`);
    for (const name of names) if (!expected.has(name)) expected.set(name, { exists: false });
    for (let s = 0; s < count; s++) {
      const srng = mulberry32((SEED * 31 + lane * 1_000_003 + s * 7_919) >>> 0);
      // Copies and redeliveries outlive the scenario: late ones land in the next scenarios (stale).
      const bus = checkBus(shared, srng.fork());
      const deps = world.requestDeps(bus);
      const ops = generateOps(srng, names);
      expectAfter(ops, expected);
      figures.add('scenarios');
      figures.add('requests', ops.length);
      // Settling starts once every request is in the store; their other copies arrive meanwhile.
      await Promise.all(
        srng.shuffle(ops).map((op) => deliverRequest(shared, srng, () => handleRequest(deps, op.message))),
      );
      try {
        const settled = await settle(world, world.checkDeps(bus), expected, 120_000, 15_000);
        figures.add('settleMsTotal', settled.ms);
        figures.max('settleMsMax', settled.ms);
        if (process.env['GUARANTEE_DEBUG'])
          console.log(`lane ${lane} scenario ${s}: ${describeOps(ops)} settled in ${settled.ms} ms`);
      } catch (err) {
        figures.add('stuck');
        throw new Error(
          `lane ${lane} scenario ${s} (seed ${SEED}): ${describeOps(ops)}\n${String(err)}\n${replayHint(FILE, SEED, scenarios)}`,
        );
      }
    }
  }

  const lanes = new Map<number, Map<string, Expected>>();
  /** The later tests build on the scenarios' end state: they skip when the scenarios did not converge. */
  let converged = false;

  beforeAll(async () => {
    const reportRng = rng.fork();
    world = await startWorld({
      kind,
      relay: kind === 'process' ? 'redelivery' : `redelivery-${kind}`,
      ports: PORTS,
      config: { gcGraceSeconds: GC_GRACE_SECONDS },
      harness: {
        deliverReport: (m, apply) =>
          closing
            ? Promise.resolve()
            : reports.send(reportRng, 'report', async () => void (closing || (await apply(m)))),
      },
      commandBus: (bus) => duplicatingBus(bus, shared, rng.fork(), 'command'),
    });
    sweeper = sweepLoop();
    figures.begin();
  }, 60_000);

  afterAll(async () => {
    sweeping = false;
    await sweeper;
    // After a failure, lanes may still be running: their deliveries never drain.
    if (converged) await quiet();
    closing = true;
    await shared.drain();
    await reports.drain();
    figures.add('creates', world ? [...world.stats.creates.values()].reduce((a, b) => a + b, 0) : 0);
    figures.add('deletes', world ? [...world.stats.deletes.values()].reduce((a, b) => a + b, 0) : 0);
    figures.zero('stuck', 'leaked', 'lostDeletes');
    figures.report();
    await world?.close();
  }, 120_000);

  describe(`guarantee: ${kind}: redelivered, duplicated and reordered messages converge`, () => {
    it(
      `${scenarios} random scenarios end with one instance per live proxy at its last applied spec and none for a deleted one`,
      async () => {
        onTestFailed(() => console.log(replayHint(FILE, SEED, scenarios)));
        await Promise.all(
          Array.from({ length: LANES }, (_, lane) => {
            const expected = new Map<string, Expected>();
            lanes.set(lane, expected);
            const count = Math.floor(scenarios / LANES) + (lane < scenarios % LANES ? 1 : 0);
            return runLane(lane, count, expected);
          }),
        );
        converged = true;
      },
      180_000 + scenarios * 5_000,
    );

    it('an apply published between two deletes but delivered after both is stale', async () => {
      const name = 'rd-order';
      const deps = world.requestDeps(dropped);
      const base = publishTimes(4);
      const [t0, t1, t2, t3] = [base, base + 1, base + 2, base + 3];
      const send = async (kind: 'apply' | 'delete', at: number) => {
        const message = onTheWire(requestBody(kind, name, 1), at);
        return handleRequest(deps, message);
      };
      await send('apply', t0);
      expect(await send('delete', t1)).toBe('marked');
      // The second delete finds the proxy already being deleted; the apply published between them arrives last.
      expect(await send('delete', t3)).toBe('already');
      expect(await send('apply', t2)).toBe('stale');
      // Still being deleted, or already finalised (a sweep may come by first): never live again.
      const left = await world.proxies.get(name);
      expect(left === undefined || left.doc.deletionRequestedAt !== undefined, 'the stale apply revived it').toBe(true);
      await settle(world, world.checkDeps(dropped), new Map([[name, { exists: false }]]));
    }, 60_000);

    it('one GC cycle past the grace period deletes nothing: no instance leaked, none that should live', async (ctx) => {
      if (!converged) ctx.skip();
      sweeping = false;
      await sweeper;
      await quiet();
      const live = [...lanes.values()].flatMap((m) => [...m].filter(([, e]) => e.exists).map(([n]) => iname(n)));
      const inventory = await world.inventory();
      const orphans = inventory.filter((i) => !live.includes(i));
      figures.add('leaked', orphans.length);
      expect(orphans, 'instances no live proxy owns').toEqual([]);
      const reports = await collectGarbage(world.gcDeps(() => Date.now() + (GC_GRACE_SECONDS + 60) * 1000));
      expect(reports.map((r) => r.skipped)).toEqual([undefined]);
      expect(reports.flatMap((r) => r.deleted)).toEqual([]);
      expect((await world.inventory()).sort()).toEqual([...live].sort());
    }, 60_000);

    it('deleting every proxy (each delete delivered 1–4 times) leaves no document, instance or process', async (ctx) => {
      if (!converged) ctx.skip();
      const deliveries = new Deliveries(figures);
      const crng = rng.fork();
      const bus = checkBus(deliveries, crng.fork());
      const deps = world.requestDeps(bus);
      const expected = new Map<string, Expected>();
      const names = [...lanes.values()].flatMap((m) => [...m.keys()]);
      const base = publishTimes(names.length);
      await Promise.all(
        names.map((name, i) => {
          expected.set(name, { exists: false });
          const message = onTheWire(requestBody('delete', name), base + i);
          return deliverRequest(deliveries, crng, () => handleRequest(deps, message));
        }),
      );
      try {
        await settle(world, world.checkDeps(bus), expected);
      } catch (err) {
        figures.add('lostDeletes');
        throw err;
      }
      // Every late copy is handled too, before the world may close: a check still holding a
      // follow-up would otherwise read from a terminated Firestore client, whose `get` then never
      // settles and rejects unhandled inside the library (`void clientPool.run(...)` in 8.7.1).
      await deliveries.drain();
      expect(await allProblems(world, expected)).toEqual([]);
      expect(await world.inventory()).toEqual([]);
      expect([...(await world.processes()).values()].reduce((a, b) => a + b, 0)).toBe(0);
    }, 120_000);
  });
}

// One describe per provider: its world's hooks run around its own tests only, one world at a time
// (at file level every world started at once, and the last one's placement was every suite's).
for (const kind of providersUnderTest()) describe(`${kind} world`, () => redeliverySuite(kind));
