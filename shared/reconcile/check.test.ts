/**
 * The check function's handler on the in-memory stores with a ManualClock: "look again soon" is a
 * follow-up message on `proxy-checks`, never a thrown error (an HTTP 500 in production).
 */
import { describe, expect, it } from 'vitest';
import { decodeBody, type BusMessage } from '../bus/message.js';
import type { Bus } from '../bus/pubsub.js';
import { TOPICS } from '../bus/topics.js';
import { parseConfig } from '../config/load.js';
import { instanceName } from '../domain/names.js';
import { createLogger } from '../logger.js';
import { createRegistry } from '../providers/registry.js';
import { ManualClock } from '../store/clock.js';
import { MemoryProviderStatusRepository } from '../store/memory/providers.js';
import { MemoryProxyRepository } from '../store/memory/proxies.js';
import { MemoryRelayRepository } from '../store/memory/relays.js';
import { MemoryState } from '../store/memory/state.js';
import { handleCheckMessage, type CheckDeps } from './check.js';
import { FollowUpLedger, MAX_FOLLOW_UP_MS, MAX_HOLD_MS } from './follow-up.js';

const logger = createLogger({ write: () => undefined });

interface Sent {
  topic: string;
  data: Record<string, unknown>;
}

function world() {
  const clock = new ManualClock();
  const state = new MemoryState(clock);
  const proxies = new MemoryProxyRepository(clock, state);
  const relays = new MemoryRelayRepository(clock, 300_000, state);
  const sent: Sent[] = [];
  const bus: Bus = {
    publish: (topic, data) => {
      sent.push({ topic, data: data as Record<string, unknown> });
      return Promise.resolve(`m-${sent.length}`);
    },
  };
  const config = parseConfig({
    installationId: 'it',
    echoUrl: 'http://127.0.0.1:1/',
    providers: [{ name: 'proc', type: 'process', relay: 'r1', options: { heartbeatTimeoutSeconds: 30 } }],
  });
  const registry = createRegistry({ config, relays, bus, logger, now: () => clock.now() });
  const waits: number[] = [];
  const deps: CheckDeps = {
    config,
    proxies,
    registry,
    logger,
    bus,
    now: () => clock.now(),
    wait: (ms) => {
      waits.push(ms);
      clock.advance(ms);
      return Promise.resolve();
    },
  };
  const checks = () => sent.filter((s) => s.topic === TOPICS.proxyChecks).map((s) => s.data);
  return { clock, proxies, relays, sent, deps, waits, checks };
}

type World = ReturnType<typeof world>;

let sequence = 0;
const message = (data: unknown, at: number): BusMessage =>
  decodeBody(`msg-${++sequence}`, at, {}, JSON.stringify(data));

/** The relay has reported (nothing yet): its provider is healthy. */
async function relayReported(w: World): Promise<void> {
  await w.relays.applyReport(
    {
      relay: 'r1',
      bootId: 'b',
      seq: 1,
      sentAt: w.clock.now(),
      startedAt: 1,
      providers: [{ name: 'proc', type: 'process', ok: true, message: 'ok' }],
      instances: [],
      results: [],
    },
    w.clock.now(),
  );
}

async function applied(w: World, name: string): Promise<void> {
  const t = w.clock.now();
  await w.proxies.apply(
    {
      apiVersion: 'egress.dev/v1',
      kind: 'Proxy',
      action: 'apply',
      metadata: { name, labels: {} },
      spec: { provider: 'proc', placement: {}, port: 0 },
    },
    t,
    t,
  );
}

describe('check: look again soon without an error', () => {
  it('a proxy being created is acknowledged and followed up at its poll time, not redelivered', async () => {
    const w = world();
    await relayReported(w);
    await applied(w, 'p-1');
    const t = w.clock.now();
    await expect(handleCheckMessage(w.deps, message({ names: ['p-1'] }, t))).resolves.toBe('done');
    expect((await w.proxies.get('p-1'))?.doc.status.phase).toBe('Provisioning');
    expect(await w.relays.command('r1', instanceName('it', 'p-1'))).toMatchObject({ kind: 'create' });
    const [followUp, ...others] = w.checks();
    expect(others).toEqual([]);
    expect(followUp).toEqual({ names: ['p-1'], dueAt: t + 2000 });

    // The follow-up, delivered at once, is held until it is due, then looks again (and follows up again).
    await expect(handleCheckMessage(w.deps, message(followUp, t))).resolves.toBe('done');
    expect(w.waits).toEqual([2000]);
    expect(w.checks()).toHaveLength(2);
    expect(w.checks()[1]).toEqual({ names: ['p-1'], dueAt: t + 4000 });
  });

  it('chains merge: two kicks, then both copies of a duplicated follow-up, keep one follow-up on its way', async () => {
    const w = world();
    const deps = { ...w.deps, followUps: new FollowUpLedger() };
    await relayReported(w);
    await applied(w, 'p-6');
    const t = w.clock.now();
    await handleCheckMessage(deps, message({ names: ['p-6'] }, t));
    w.clock.advance(500);
    await handleCheckMessage(deps, message({ names: ['p-6'] }, w.clock.now()));
    expect(w.checks()).toEqual([{ names: ['p-6'], dueAt: t + 2000 }]);
    // Pub/Sub delivers the follow-up twice: the first copy asks for the next look, the second leaves it.
    const [followUp] = w.checks();
    await handleCheckMessage(deps, message(followUp, w.clock.now()));
    await handleCheckMessage(deps, message(followUp, w.clock.now()));
    expect(w.checks()).toEqual([
      { names: ['p-6'], dueAt: t + 2000 },
      { names: ['p-6'], dueAt: t + 4000 },
    ]);
    // Without the ledger each copy starts a chain of its own.
    const apart = world();
    await relayReported(apart);
    await applied(apart, 'p-6');
    await handleCheckMessage(apart.deps, message({ names: ['p-6'] }, apart.clock.now()));
    await handleCheckMessage(apart.deps, message({ names: ['p-6'] }, apart.clock.now()));
    expect(apart.checks()).toHaveLength(2);
  });

  it('a follow-up whose hold ends a millisecond early by the wall clock still asks for the next look', async () => {
    const w = world();
    // Node's timers count whole milliseconds of a monotonic clock: the wall clock may read just short of dueAt.
    const deps = {
      ...w.deps,
      followUps: new FollowUpLedger(),
      wait: (ms: number) => (w.clock.advance(ms - 1), Promise.resolve()),
    };
    await relayReported(w);
    await applied(w, 'p-7');
    const t = w.clock.now();
    await handleCheckMessage(deps, message({ names: ['p-7'] }, t));
    await handleCheckMessage(deps, message(w.checks()[0], w.clock.now()));
    expect(w.clock.now()).toBe(t + 1999);
    expect(w.checks()).toEqual([
      { names: ['p-7'], dueAt: t + 2000 },
      { names: ['p-7'], dueAt: t + 1999 + 2000 },
    ]);
  });

  it('a late follow-up runs at once, and so does a dueAt beyond the window (a skewed clock)', async () => {
    const w = world();
    await relayReported(w);
    await applied(w, 'p-2');
    const t = w.clock.now();
    await handleCheckMessage(w.deps, message({ names: ['p-2'], dueAt: t - 5000 }, t));
    await handleCheckMessage(w.deps, message({ names: ['p-2'], dueAt: t + MAX_FOLLOW_UP_MS + 1 }, t));
    expect(w.waits).toEqual([]);
    expect(await w.relays.command('r1', instanceName('it', 'p-2'))).toMatchObject({ kind: 'create' });
  });

  it('a follow-up due later than the hold is held that long, then passed on unchanged, not checked', async () => {
    const w = world();
    await relayReported(w);
    await applied(w, 'p-5');
    const t = w.clock.now();
    const later = { names: ['p-5'], dueAt: t + 3 * MAX_HOLD_MS + 500 };
    await expect(handleCheckMessage(w.deps, message(later, t))).resolves.toBe('done');
    expect(w.waits).toEqual([MAX_HOLD_MS]);
    expect(w.checks()).toEqual([later]);
    expect(await w.relays.command('r1', instanceName('it', 'p-5'))).toBeUndefined();
    // Passed on until it is due, then checked: the hold never exceeds MAX_HOLD_MS.
    const created = () => w.relays.command('r1', instanceName('it', 'p-5'));
    for (let hop = 0; hop < 10 && !(await created()); hop++)
      await handleCheckMessage(w.deps, message(later, w.clock.now()));
    expect(w.waits).toEqual([MAX_HOLD_MS, MAX_HOLD_MS, MAX_HOLD_MS, 500]);
    expect(w.clock.now()).toBe(later.dueAt);
    expect(await created()).toMatchObject({ kind: 'create' });
    expect(w.checks().slice(0, 3)).toEqual([later, later, later]);
  });

  it('a settled proxy asks for nothing, and a sweep never follows up (the next sweep is its retry)', async () => {
    const w = world();
    await relayReported(w);
    await applied(w, 'p-3');
    await handleCheckMessage(w.deps, message({ sweep: true }, w.clock.now()));
    expect((await w.proxies.get('p-3'))?.doc.status.phase).toBe('Provisioning');
    expect(w.checks()).toEqual([]);
  });

  it('a bad dueAt is refused naming the field, and acknowledged', async () => {
    const w = world();
    const warnings: unknown[] = [];
    const deps = { ...w.deps, logger: createLogger({ write: (line) => void warnings.push(JSON.parse(line)) }) };
    await expect(handleCheckMessage(deps, message({ names: ['p-4'], dueAt: -1 }, 0))).resolves.toBe('rejected');
    expect(warnings).toContainEqual(expect.objectContaining({ field: 'dueAt' }));
  });
});

describe('check: a sweep passes its provider verdicts along the chain', () => {
  it('reads a verdict once per sweep, not once per page, and again when the passed one is a health run old', async () => {
    const w = world();
    await relayReported(w);
    for (const name of ['s-1', 's-2', 's-3']) await applied(w, name);
    const verdicts = new MemoryProviderStatusRepository();
    const lastCheckAt = new Date(w.clock.now()).toISOString();
    await verdicts.write({
      name: 'proc',
      type: 'process',
      status: 'Healthy',
      message: 'ok',
      latencyMs: 3,
      lastCheckAt,
    });
    const gets: string[] = [];
    const providerStatus = {
      write: (v: Parameters<typeof verdicts.write>[0]) => verdicts.write(v),
      all: () => verdicts.all(),
      get: (name: string) => (gets.push(name), verdicts.get(name)),
    };
    const deps: CheckDeps = { ...w.deps, providerStatus, config: { ...w.deps.config, checkBatchSize: 1 } };
    await handleCheckMessage(deps, message({ sweep: true }, w.clock.now()));
    // Each page publishes the next with what it read; deliver the chain to its end.
    for (let delivered = 0; delivered < w.checks().length; delivered++)
      await handleCheckMessage(deps, message(w.checks()[delivered], w.clock.now()));
    const pages = w.checks().filter((c) => 'sweep' in c);
    expect(pages.map((c) => c['after'])).toEqual(['s-1', 's-2', 's-3']);
    expect(pages[0]?.['health']).toMatchObject({ providers: { proc: { ok: true, message: 'ok', latencyMs: 3 } } });
    expect(gets).toEqual(['proc']);
    // A page handed verdicts a health interval old reads its own.
    const old = { ...pages[0], after: null };
    w.clock.advance(w.deps.config.healthIntervalSeconds * 1000);
    await handleCheckMessage(deps, message(old, w.clock.now()));
    expect(gets).toEqual(['proc', 'proc']);
  });
});
