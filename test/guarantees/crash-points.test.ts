/**
 * Crash points: the functions die at each step of create, replace, delete and GC — after taking the
 * lease, after the provider call (before the status write), after the status write (before the
 * ack), after recording a relay command (before publishing it: a timeout), with the relay's report
 * lost, and paused past the lease to resume later (a zombie). After recovery and one GC cycle
 * nothing is leaked, nothing that should live was deleted, and no lease is held. Against each
 * provider type with a world (its kit, test/kits/); the relay's own points (a lost command, a lost
 * report, a relay dying mid-command) only where there is a relay.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import type { Bus } from '../../shared/bus/pubsub.js';
import { runCheck } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { handleRequest } from '../../shared/requests.js';
import { onTheWire } from './support/deliveries.js';
import { Crash } from './support/faulty-store.js';
import { Faults, type FaultPoint } from './support/faults.js';
import { Figures } from './support/figures.js';
import { replayHint, suiteSeed } from './support/prng.js';
import { expectationOf, publishTimes, requestBody } from './support/scenarios.js';
import { settle } from './support/settle.js';
import { iname, INSTALLATION, startWorld, type Expected, type World } from './support/world.js';
import { proxyPorts } from '../support/relay-harness.js';
import { providersUnderTest, type ProviderKind } from '../kits/registry.js';
import { RELAY_TYPES } from '../../shared/config/schema.js';

const FILE = 'test/guarantees/crash-points.test.ts';
const SEED = suiteSeed(0x5eed0002);
const GRACE_SECONDS = 600;
const POINTS: FaultPoint[] = [
  'lease-taken',
  'after-provider-call',
  'after-status-write',
  'publish-lost',
  'report-lost',
  'paused-past-lease',
];

interface CrashCase {
  flow: 'create' | 'replace' | 'delete';
  point: FaultPoint;
  /** In a replacement: crash at its delete or at its create. */
  step?: 'delete' | 'create';
}
/** Points that need a relay: its command on the bus, its report. */
const RELAY_POINTS: FaultPoint[] = ['publish-lost', 'report-lost'];
const casesOf = (points: FaultPoint[]): CrashCase[] => [
  ...points.map((point): CrashCase => ({ flow: 'create', point })),
  ...points.flatMap((point): CrashCase[] => [
    { flow: 'replace', point, step: 'delete' },
    { flow: 'replace', point, step: 'create' },
  ]),
  ...points.map((point): CrashCase => ({ flow: 'delete', point })),
];
const relayed = (kind: ProviderKind) => RELAY_TYPES.includes(kind);
/** Process ports of the process backend. */
const PORTS = proxyPorts(25200, 50);

/** The relay's backend acts, then the relay dies before recording, acknowledging or reporting it. */
const RELAY_CASES: CrashCase[] = [
  { flow: 'create', point: 'relay-dies-mid-command' },
  { flow: 'replace', point: 'relay-dies-mid-command', step: 'delete' },
  { flow: 'replace', point: 'relay-dies-mid-command', step: 'create' },
  { flow: 'delete', point: 'relay-dies-mid-command' },
];

function crashSuite(kind: ProviderKind): void {
  const POINTS_HERE = relayed(kind) ? POINTS : POINTS.filter((p) => !RELAY_POINTS.includes(p));
  const CASES = casesOf(POINTS_HERE);
  const figures = new Figures('crash-points', SEED, kind);
  const faults = new Faults(figures);
  /** Kicks are dropped: the test plays Pub/Sub and runs the check function itself. */
  const dropped: Bus = { publish: () => Promise.resolve('dropped') };
  let world: World;
  const expectations = new Map<string, Expected>();

  const checkDeps = () => world.checkDeps(dropped);
  /** Publishes one request: the request function handles it once. */
  async function request(body: Record<string, unknown>): Promise<void> {
    await handleRequest(world.requestDeps(dropped), onTheWire(body, publishTimes(1)));
  }

  /** Invocations abandoned at their timeout, by proxy: they may go on running (a zombie). */
  const abandoned = new Map<string, Promise<string>[]>();

  /** One invocation of the check function: it finishes, crashes, or hangs until abandoned (its timeout). */
  async function invoke(name: string, timeoutMs = 3000): Promise<string> {
    const run = runCheck(checkDeps(), { names: [name] }).then(
      () => 'ok',
      (err: unknown) => (err instanceof Crash ? 'crashed' : `failed: ${String(err)}`),
    );
    const outcome = await Promise.race([run, sleep(timeoutMs).then(() => 'timed out')]);
    if (outcome === 'timed out') abandoned.set(name, [...(abandoned.get(name) ?? []), run]);
    return outcome;
  }

  /** Waits (at most 10 s) until the invocations abandoned on `name` have ended. */
  async function abandonedEnd(name: string, label: string): Promise<void> {
    const runs = abandoned.get(name) ?? [];
    abandoned.delete(name);
    const end = await Promise.race([Promise.all(runs).then(() => 'ended'), sleep(10_000).then(() => 'running')]);
    expect(end, `${label}: the ${runs.length} abandoned invocation(s) of ${name} after 10 s`).toBe('ended');
  }

  /** A case brought to its crash point: what it must converge to once recovered. */
  interface Crashed {
    c: CrashCase;
    name: string;
    label: string;
    expected: Map<string, Expected>;
  }

  /** Sets the case up, arms its crash point and runs the check function until the point fires. */
  async function provoke(c: CrashCase, index: number): Promise<Crashed> {
    const name = `cr-${index}`;
    const label = `${c.flow}${c.step ? `/${c.step}` : ''} × ${c.point}`;
    if (c.flow !== 'create') {
      await request(requestBody('apply', name, 0));
      await settle(world, checkDeps(), new Map([[name, expectationOf('apply', name, 0)]]));
    }
    faults.arm(c.point, name, c.step === 'create' ? 1 : 0);
    // A replacement moves to variant 1 (another placement: another spec hash).
    const [kind, variant] =
      c.flow === 'delete' ? (['delete', 0] as const) : (['apply', c.flow === 'replace' ? 1 : 0] as const);
    await request(requestBody(kind, name, variant));
    const expected = new Map([[name, expectationOf(kind, name, variant)]]);
    const deadline = Date.now() + 30_000;
    const outcomes: string[] = [];
    while (!faults.fired(c.point, name)) {
      if (Date.now() > deadline)
        throw new Error(`${label}: the crash point was never reached (${outcomes.join(', ')})`);
      outcomes.push(await invoke(name));
      if (process.env['GUARANTEE_DEBUG']) console.log(label, JSON.stringify(await world.snapshot(name)).slice(0, 2000));
      await sleep(200);
    }
    return { c, name, label, expected };
  }

  /** Recovery: Pub/Sub redelivers, the sweep comes by: checks run until it converges; then no lease is held. */
  async function recover({ c, name, label, expected }: Crashed): Promise<void> {
    try {
      await settle(world, checkDeps(), expected);
      if (c.point === 'paused-past-lease') {
        const before = (await world.snapshot(name)).item?.createdAt;
        faults.release(name);
        await abandonedEnd(name, label);
        // Whatever the zombie does with its stale decision, nothing that lives may be lost.
        expect(await world.problems(name, expected.get(name) ?? { exists: false })).toEqual([]);
        expect((await world.snapshot(name)).item?.createdAt, 'the live instance was replaced').toBe(before);
        await settle(world, checkDeps(), expected);
        // Nor later, once what the zombie sent (a relay command) has been acted on.
        expect((await world.snapshot(name)).item?.createdAt, 'the live instance was replaced later').toBe(before);
      }
    } catch (err) {
      figures.add('stuck');
      if (c.flow === 'delete') figures.add('lostDeletes');
      throw new Error(`${label} (${name}): ${String(err)}`);
    }
    const lease = (await world.snapshot(name)).doc?.lease;
    expect(lease === undefined || lease.until <= Date.now(), `${label}: a lease is held`).toBe(true);
    for (const [n, e] of expected) expectations.set(n, e);
    figures.add('crashCases');
  }

  /** One GC pass as the GC function: it finishes, or hangs and is abandoned. */
  async function gcPass(now: () => number): Promise<string> {
    const run = collectGarbage(world.gcDeps(now)).then((reports) => JSON.stringify(reports.map((r) => r.deleted)));
    return Promise.race([run, sleep(3000).then(() => 'timed out')]);
  }

  /** After recovery, one GC cycle past the grace period must find nothing to collect. */
  async function gcFindsNothing(): Promise<void> {
    const reports = await collectGarbage(world.gcDeps(() => Date.now() + (GRACE_SECONDS + 60) * 1000));
    const deleted = reports.flatMap((r) => r.deleted);
    figures.add('leaked', deleted.length);
    expect(deleted, 'GC found leaked instances').toEqual([]);
    const live = [...expectations].filter(([, e]) => e.exists).map(([n]) => iname(n));
    expect((await world.inventory()).sort()).toEqual(live.sort());
  }

  beforeAll(async () => {
    world = await startWorld({
      kind,
      relay: kind === 'process' ? 'crash' : `crash-${kind}`,
      ports: PORTS,
      config: { leaseSeconds: 2, gcGraceSeconds: GRACE_SECONDS },
      providerOptions: { commandResendSeconds: 3 },
      harness: { deliverReport: faults.deliverReport, wrapBackend: (backend) => faults.relayBackend(backend) },
      hooks: faults.providerHooks,
      commandBus: (bus) => faults.commandBus(bus),
    });
    world.proxies.hook = faults.storeHook;
    figures.begin();
  }, 60_000);

  afterAll(async () => {
    figures.zero('leaked', 'stuck', 'lostDeletes');
    figures.report();
    await world?.close();
  }, 60_000);

  describe(`guarantee: ${kind}: a crash at any step of create, replace or delete recovers without leaks or losses`, () => {
    it(`${CASES.length} cases (${POINTS_HERE.length} crash points × create, replacement delete, replacement create, delete): each converges, then one GC cycle finds nothing`, async () => {
      onTestFailed(() => console.log(replayHint(FILE, SEED)));
      // GUARANTEE_ONLY=<text> runs the cases whose `flow/step/point` contains it (`paused-past-lease`, `replace/create/`).
      const only = process.env['GUARANTEE_ONLY'];
      const cases = CASES.map((c, i) => ({ c, i })).filter(
        ({ c }) => !only || `${c.flow}/${c.step ?? ''}/${c.point}`.includes(only),
      );
      for (let k = 0; k < cases.length; k += 12) {
        await Promise.all(cases.slice(k, k + 12).map(async ({ c, i }) => recover(await provoke(c, i))));
      }
      await gcFindsNothing();
    }, 400_000);
  });

  describe.runIf(relayed(kind))(
    `guarantee: ${kind}: a relay that dies mid-command loses nothing and leaks nothing once restarted`,
    () => {
      it(`${RELAY_CASES.length} commands cut off after the backend acted: the next boot converges: one proxy process per live proxy, none for a deleted one`, async () => {
        onTestFailed(() => console.log(replayHint(FILE, SEED)));
        const crashed = await Promise.all(RELAY_CASES.map((c, i) => provoke(c, CASES.length + i)));
        // The relay comes back as a new boot; the cut-off commands were never acknowledged.
        const agent = world.h?.agent;
        if (!agent) throw new Error('no relay to restart');
        await agent.stop();
        await agent.start();
        figures.add('relayRestarts');
        await Promise.all(crashed.map(recover));
        await gcFindsNothing();
      }, 180_000);
    },
  );

  describe(`guarantee: ${kind}: GC that dies mid-pass or loses its command collects every orphan later, never a live instance`, () => {
    it('orphans are collected over the next passes; the live proxy is untouched', async () => {
      const live = 'cr-gc-live';
      await request(requestBody('apply', live, 0));
      await settle(world, checkDeps(), new Map([[live, expectationOf('apply', live, 0)]]));
      const raw = world.raw;
      const orphans = ['orphan-a', 'orphan-b', 'orphan-c'];
      for (const proxy of orphans) {
        const credentials = { username: `u-${proxy}`, password: randomBytes(18).toString('base64url') };
        const spec = { name: iname(proxy), proxy, installationId: INSTALLATION, specHash: 'x', port: 0, placement: {} };
        await raw.create({ ...spec, credentials });
      }
      const inventory = async () => new Set(await world.inventory());
      let lastSeen = new Set<string>();
      const deadline = Date.now() + 30_000;
      while (!orphans.every((o) => lastSeen.has(iname(o)))) {
        if (Date.now() > deadline) throw new Error('orphans never reached the inventory');
        lastSeen = await inventory();
        await sleep(300);
      }
      faults.arm('gc-dies-after-delete', 'orphan-a');
      // Without a relay there is no command to lose: that orphan's delete simply goes through.
      if (relayed(kind)) faults.arm('publish-lost', 'orphan-b');
      const later = () => Date.now() + (GRACE_SECONDS + 60) * 1000;
      const passes: string[] = [];
      const until = Date.now() + 60_000;
      while (orphans.some((o) => lastSeen.has(iname(o)))) {
        if (Date.now() > until) throw new Error(`orphans left after ${passes.length} GC passes: ${passes.join(' ')}`);
        passes.push(await gcPass(later));
        await sleep(500);
        lastSeen = await inventory();
      }
      expect(passes.filter((p) => p === 'timed out').length).toBeGreaterThanOrEqual(relayed(kind) ? 2 : 1);
      expect(world.stats.deletes.get(iname(live)) ?? 0, 'GC deleted a live instance').toBe(0);
      expect(await world.problems(live, expectationOf('apply', live, 0))).toEqual([]);
      const processes = await world.processes();
      expect(orphans.map((o) => processes.get(iname(o)) ?? 0)).toEqual([0, 0, 0]);
      figures.add('gcPasses', passes.length);
    }, 120_000);
  });
}

// One describe per provider: its world's hooks run around its own tests only, one world at a time
// (at file level every world started at once, and the last one's placement was every suite's).
for (const kind of providersUnderTest()) describe(`${kind} world`, () => crashSuite(kind));
