/**
 * Concurrency: many checks, sweeps and duplicated requests at once on one proxy. Leases and fencing
 * keep the provider from seeing two creates for it (or two mutating calls at once), and GC running
 * alongside never touches it. Against each provider type with a guarantee world (test/kits/).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { Bus } from '../../shared/bus/pubsub.js';
import { runCheck } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { handleRequest } from '../../shared/requests.js';
import { onTheWire } from './support/deliveries.js';
import { Figures } from './support/figures.js';
import { mulberry32, replayHint, scenarioCount, suiteSeed } from './support/prng.js';
import { expectationOf, publishTimes, requestBody } from './support/scenarios.js';
import { settle } from './support/settle.js';
import { eventually } from '../support/eventually.js';
import { iname, startWorld, type World } from './support/world.js';
import { proxyPorts } from '../support/relay-harness.js';
import { guaranteeKit, providersUnderTest, type ProviderKind } from '../kits/registry.js';

const FILE = 'test/guarantees/concurrency.test.ts';
const SEED = suiteSeed(0x5eed0003);
/** Storm rounds: the full count in the cheapest world (its kit's `fullCounts`), fewer elsewhere (the soak runs more). */
const roundsIn = (kind: ProviderKind) => (guaranteeKit(kind).fullCounts ? scenarioCount(2, 20) : scenarioCount(1, 10));
/** Proxy ports of the process backend. */
const PORTS = proxyPorts(25300, 50);
const CHECKS = 40;
function concurrencySuite(kind: ProviderKind): void {
  const rounds = roundsIn(kind);
  const figures = new Figures('concurrency', SEED, kind);
  const rng = mulberry32(SEED);
  const dropped: Bus = { publish: () => Promise.resolve('dropped') };
  let world: World;

  /** One observation held back: the first `get` of `instance` waits for `release` once it has read. */
  interface Held {
    instance: string;
    taken: boolean;
    reached: () => void;
    released: Promise<void>;
  }
  let held: Held | undefined;

  /** Holds the next observation of `name` (after it has read); resolves with the release once it is held. */
  function holdNextObservation(name: string): { reached: Promise<void>; release: () => void } {
    let release = () => undefined as void;
    let reached = () => undefined as void;
    const released = new Promise<void>((r) => (release = r));
    const whenReached = new Promise<void>((r) => (reached = r));
    held = { instance: iname(name), taken: false, reached, released };
    return { reached: whenReached, release };
  }

  /** One storm: the same request `copies` times, `CHECKS` checks and a few sweeps, all at once, with jitter. */
  async function storm(name: string, body: Record<string, unknown>, copies: number): Promise<void> {
    const message = onTheWire(body, publishTimes(1));
    const deps = world.requestDeps(dropped);
    // Seeded random delays make the interleavings under test; nothing is awaited through them.
    const jitter = () => sleep(rng.int(0, 150));
    const work: Promise<unknown>[] = [];
    for (let i = 0; i < copies; i++) work.push(jitter().then(() => handleRequest(deps, message)));
    for (let i = 0; i < CHECKS; i++)
      work.push(jitter().then(() => runCheck(world.checkDeps(dropped), { names: [name] })));
    for (let i = 0; i < 3; i++) work.push(jitter().then(() => runCheck(world.checkDeps(dropped), { sweep: true })));
    // A failed invocation is redelivered by Pub/Sub: here it simply counts as one that did nothing.
    const outcomes = await Promise.allSettled(work);
    figures.add('concurrentInvocations', work.length);
    figures.add('failedInvocations', outcomes.filter((o) => o.status === 'rejected').length);
  }

  beforeAll(async () => {
    world = await startWorld({
      kind,
      relay: kind === 'process' ? 'concur' : `concur-${kind}`,
      ports: PORTS,
      // Slow workers: an observation can be some time old by the time a worker acts on it.
      hooks: {
        after: async (op, target) => {
          if (op !== 'get') return;
          if (held && target === held.instance && !held.taken) {
            held.taken = true;
            held.reached();
            await held.released;
          } else await sleep(rng.int(0, 300)); // a slow worker (seeded): stale observations are the point
        },
      },
    });
    figures.begin();
  }, 60_000);

  afterAll(async () => {
    figures.zero('doubleCreates', 'overlappingCalls');
    figures.report();
    await world?.close();
  }, 60_000);

  describe(`guarantee: ${kind}: concurrent checks and requests on one proxy never make the provider create it twice`, () => {
    it("a worker whose observation predates another worker's create does not create again", async () => {
      onTestFailed(() => console.log(replayHint(FILE, SEED)));
      const name = 'cc-stale';
      const message = onTheWire(requestBody('apply', name, 0), publishTimes(1));
      await handleRequest(world.requestDeps(dropped), message);
      // A observes "no instance", then stalls; B creates meanwhile and releases its lease.
      const hold = holdNextObservation(name);
      // A check whose observation fails before it reads (the relay has not reported yet) ends without
      // being held and without acting: first wait for the backend to answer, then run A again, as a
      // redelivery would, a bounded number of times.
      await eventually(
        async () => expect((await world.raw.check?.())?.ok, 'the backend answers its health check').toBe(true),
        30_000,
        100,
      );
      let a: Promise<unknown> = Promise.resolve();
      let stalled = false;
      for (let attempt = 0; attempt < 20 && !stalled; attempt++) {
        a = runCheck(world.checkDeps(dropped), { names: [name] });
        stalled = (await Promise.race([hold.reached.then(() => 'held'), a.then(() => 'done')])) === 'held';
        if (!stalled) expect(world.stats.creates.get(iname(name)) ?? 0, 'creates by an A that was not held').toBe(0);
      }
      expect(stalled, 'a check reached the held observation (20 attempts)').toBe(true);
      await runCheck(world.checkDeps(dropped), { names: [name] });
      expect(world.stats.creates.get(iname(name)), 'creates by B').toBe(1);
      hold.release();
      await a;
      expect(world.stats.creates.get(iname(name)), 'creates once A acted on its stale observation').toBe(1);
      await settle(world, world.checkDeps(dropped), new Map([[name, expectationOf('apply', name, 0)]]));
      expect(world.stats.creates.get(iname(name))).toBe(1);
      figures.add('staleObservations');
    }, 60_000);

    it('a lease taken after a slow acquisition still covers the provider call', async () => {
      const name = 'cc-slow-lease';
      const message = onTheWire(requestBody('apply', name, 0), publishTimes(1));
      await handleRequest(world.requestDeps(dropped), message);
      // The database takes longer than the whole lease (leaseSeconds: 5) to take it: the worker's
      // clock moves 5.5 s while the acquisition is under way (no wall-clock wait).
      let slowness = 0;
      const workerClock = () => Date.now() + slowness;
      world.proxies.hook = (point, proxy) => {
        if (point === 'acquireLease:before' && proxy === name) slowness += 5_500;
      };
      try {
        await runCheck({ ...world.checkDeps(dropped), now: workerClock }, { names: [name] });
      } finally {
        world.proxies.hook = () => undefined;
      }
      expect(world.stats.creates.get(iname(name)) ?? 0, 'creates by the slow check').toBe(1);
      await settle(world, world.checkDeps(dropped), new Map([[name, expectationOf('apply', name, 0)]]));
    }, 60_000);

    it('a worker that lost its lease cannot write its status over a newer one', async () => {
      const name = 'cc-fenced';
      const message = onTheWire(requestBody('apply', name, 0), publishTimes(1));
      await handleRequest(world.requestDeps(dropped), message);
      const read = await world.proxies.get(name);
      if (!read) throw new Error('no document');
      const { doc } = read;
      const t = Date.now();
      // A's lease runs out mid-call; B (deciding on a read after A took it) takes one, writes and
      // releases it; A then comes back.
      expect(await world.proxies.acquireLease(name, 'a', doc.generation, 100, () => t, read.readAt)).toBe(t + 100);
      const readByB = (await world.proxies.get(name))?.readAt ?? '';
      expect(await world.proxies.acquireLease(name, 'b', doc.generation, 5_000, () => t + 200, readByB)).toBe(
        t + 5_200,
      );
      const newer = { ...doc.status, phase: 'Provisioning' as const, observedGeneration: doc.generation };
      expect(await world.proxies.writeStatus(name, doc.generation, newer, t + 300, 'b')).toBe(true);
      const stale = { ...doc.status, phase: 'Failed' as const, observedGeneration: doc.generation };
      expect(await world.proxies.writeStatus(name, doc.generation, stale, t + 400, 'a'), 'the stale write').toBe(false);
      expect((await world.proxies.get(name))?.doc.status.phase).toBe('Provisioning');
      await handleRequest(world.requestDeps(dropped), onTheWire(requestBody('delete', name), publishTimes(1)));
      await settle(world, world.checkDeps(dropped), new Map([[name, expectationOf('delete', name)]]));
    }, 60_000);

    it(
      `${rounds} rounds of create, replace and delete storms (${CHECKS} checks each): one create per instance, never two calls at once`,
      async () => {
        onTestFailed(() => console.log(replayHint(FILE, SEED, rounds)));
        for (let round = 0; round < rounds; round++) {
          const name = `cc-${round}`;
          const instance = iname(name);
          await storm(name, requestBody('apply', name, 0), rng.int(2, 8));
          await settle(world, world.checkDeps(dropped), new Map([[name, expectationOf('apply', name, 0)]]));
          const creates = world.stats.creates.get(instance) ?? 0;
          figures.add('doubleCreates', creates - 1);
          expect(creates, `${name}: creates after the first storm`).toBe(1);

          // A replacement storm: one delete of the old instance may be repeated (rule delete-idempotent), one create.
          await storm(name, requestBody('apply', name, 1), rng.int(2, 8));
          await settle(world, world.checkDeps(dropped), new Map([[name, expectationOf('apply', name, 1)]]));
          expect(world.stats.creates.get(instance), `${name}: creates after the replacement storm`).toBe(2);

          // GC alongside a delete storm: it never deletes what a proxy owns.
          const gc = collectGarbage(world.gcDeps());
          await storm(name, requestBody('delete', name), rng.int(2, 8));
          expect((await gc).flatMap((r) => r.deleted)).toEqual([]);
          await settle(world, world.checkDeps(dropped), new Map([[name, expectationOf('delete', name)]]));
          expect(world.stats.creates.get(instance), `${name}: creates after the delete storm`).toBe(2);
          figures.add('rounds');
        }
        figures.add('overlappingCalls', world.stats.overlappingCreates.size);
        expect([...world.stats.overlappingCreates]).toEqual([]);
        expect(world.stats.maxOverlap).toBe(1);
      },
      120_000 + rounds * 60_000,
    );
  });
}

// One describe per provider: its world's hooks run around its own tests only, one world at a time
// (at file level every world started at once, and the last one's placement was every suite's).
for (const kind of providersUnderTest()) describe(`${kind} world`, () => concurrencySuite(kind));
