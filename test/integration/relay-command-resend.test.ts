/**
 * A relay command that was recorded but lost is sent again by the next check, as the same command:
 * the case where a proxy stays Provisioning because a function was killed between recording its
 * create and publishing it. Real Firestore emulator, a controlled clock, and a bus
 * that records what reaches `relay-commands`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Bus } from '../../shared/bus/pubsub.js';
import { parseConfig } from '../../shared/config/load.js';
import { instanceName } from '../../shared/domain/names.js';
import { createLogger } from '../../shared/logger.js';
import { QUEUED_RESENDS } from '../../shared/providers/relayed/index.js';
import { createRegistry } from '../../shared/providers/registry.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { relayCommandSchema, type RelayCommand } from '../../shared/wire/protocol.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { emulatorEnv } from '../support/emulator-env.js';
import { applyRequest } from '../support/reconcile-steps.js';

const RELAY = 'resend';
const RESEND_SECONDS = 60;
const LEASE_SECONDS = 5;
const emu = emulatorEnv('resend');
const db = createFirestore(emu.projectId);
const logger = createLogger({ write: () => undefined });
const proxies = new FirestoreProxyRepository(db, logger);
const relays = new FirestoreRelayRepository(db, logger);
const config = parseConfig({
  installationId: 'it',
  echoUrl: 'http://127.0.0.1:9/',
  leaseSeconds: LEASE_SECONDS,
  providers: [{ name: 'later', type: 'process', relay: RELAY, options: { commandResendSeconds: RESEND_SECONDS } }],
});
let clock = Date.now();
const now = () => clock;

/** Relay commands that reached the topic; other topics (kicks) are dropped. */
function recordingBus(): Bus & { commands: RelayCommand[] } {
  const commands: RelayCommand[] = [];
  return {
    commands,
    publish(topic, data) {
      if (topic === 'relay-commands') commands.push(relayCommandSchema.parse(data));
      return Promise.resolve(String(commands.length));
    },
  };
}

/** A bus whose relay-command publish never returns: the function is killed while publishing. */
function dyingBus(): Bus & { reached: Promise<void> } {
  let reached!: () => void;
  const promise = new Promise<void>((resolve) => (reached = resolve));
  return {
    reached: promise,
    publish(topic) {
      if (topic !== 'relay-commands') return Promise.resolve('dropped');
      reached();
      return new Promise<string>(() => undefined);
    },
  };
}

/** When the relay's running boot started (`startedAt` of its reports). */
let bootStartedAt = clock;

/** The relay's heartbeat, as its report would store it: up now, running `later`, since `bootStartedAt`. */
const heartbeat = () =>
  db
    .collection('relays')
    .doc(RELAY)
    .set({
      bootId: 'boot',
      seq: 1,
      sentAt: clock,
      startedAt: bootStartedAt,
      heartbeatAt: clock,
      providers: [{ name: 'later', type: 'process', ok: true, message: 'ok' }],
    });

/** Applies `name`, checks it (its create is sent), and lists its instance as the relay's report would. */
async function listedInstance(name: string): Promise<string> {
  await proxies.apply(applyRequest(name, 'later'), clock, clock);
  await check(recordingBus(), name);
  const iname = instanceName('it', name);
  const created = await relays.command(RELAY, iname);
  await db
    .collection('relays')
    .doc(RELAY)
    .collection('instances')
    .doc(iname)
    .set({
      name: iname,
      proxy: name,
      installationId: 'it',
      specHash: created?.specHash ?? '',
      state: 'Running',
      ip: '127.0.0.1',
      port: 1,
      createdAt: clock,
      provider: 'later',
    });
  return iname;
}

/** One check of `name`, with the relay up. */
async function check(bus: Bus, name: string): Promise<void> {
  await heartbeat();
  await runCheck(depsWith(bus), { names: [name] });
}

const depsWith = (bus: Bus): CheckDeps => ({
  config,
  proxies,
  registry: createRegistry({ config, relays, bus, logger, now }),
  logger,
  bus,
  now,
});

beforeAll(() => emu.clearFirestore());
afterAll(() => db.terminate());

describe('relay commands that were lost are sent again', () => {
  it('a create recorded by a check that died before publishing it is published by the next check, the same command', async () => {
    await proxies.apply(applyRequest('lost-1', 'later'), clock, clock);
    const dying = dyingBus();
    // Never settles: the worker is gone, holding its lease, with the command recorded and unsent.
    await heartbeat();
    void runCheck(depsWith(dying), { names: ['lost-1'] });
    await dying.reached;
    const recorded = await relays.command(RELAY, instanceName('it', 'lost-1'));
    expect(recorded).toMatchObject({ kind: 'create', done: false });
    expect(recorded?.sentAt).toBeUndefined();
    // Within the sender's lease it may still be publishing: not NotFound, or a deletion would
    // finalise the proxy under a create about to reach the relay.
    const provider = depsWith(recordingBus()).registry.get('later');
    await expect(provider?.get(instanceName('it', 'lost-1'))).resolves.toMatchObject({ state: 'Pending' });

    // Past the dead worker's lease, far short of commandResendSeconds.
    clock += (LEASE_SECONDS + 1) * 1000;
    const bus = recordingBus();
    await check(bus, 'lost-1');
    expect(bus.commands).toHaveLength(1);
    expect(bus.commands[0]).toMatchObject({
      kind: 'create',
      commandId: recorded?.commandId,
      issuedAt: recorded?.issuedAt,
    });
    expect((await relays.command(RELAY, instanceName('it', 'lost-1')))?.sentAt).toBe(clock);
    expect((await proxies.get('lost-1'))?.doc.status.phase).toBe('Provisioning');
  });

  it('a create published and never applied by a relay that restarted since is sent again after commandResendSeconds, the same command, and not before', async () => {
    await proxies.apply(applyRequest('lost-2', 'later'), clock, clock);
    const first = recordingBus();
    await check(first, 'lost-2');
    expect(first.commands).toHaveLength(1);
    // The boot it was sent to died; the next one reports.
    bootStartedAt = clock + 1000;

    clock += (RESEND_SECONDS - 1) * 1000;
    const early = recordingBus();
    await check(early, 'lost-2');
    expect(early.commands).toEqual([]);

    clock += 2000;
    const late = recordingBus();
    await check(late, 'lost-2');
    expect(late.commands).toEqual([first.commands[0]]);
  });

  it('a create waiting in the queue of the relay that has run since it was sent is not sent again until QUEUED_RESENDS delays have passed', async () => {
    bootStartedAt = clock - 1000;
    await proxies.apply(applyRequest('queued-1', 'later'), clock, clock);
    const first = recordingBus();
    await check(first, 'queued-1');
    expect(first.commands).toHaveLength(1);

    // Every resend delay the same boot reports (the relay is busy with the creates before it).
    for (let i = 1; i < QUEUED_RESENDS; i++) {
      clock += RESEND_SECONDS * 1000;
      const early = recordingBus();
      await check(early, 'queued-1');
      expect(early.commands, `after ${i} resend delays`).toEqual([]);
      await expect(depsWith(early).registry.get('later')?.get(instanceName('it', 'queued-1'))).resolves.toMatchObject({
        state: 'Pending',
      });
    }
    // Dead-lettered, say: sent again at last.
    clock += RESEND_SECONDS * 1000 + 1000;
    const late = recordingBus();
    await check(late, 'queued-1');
    expect(late.commands).toEqual([first.commands[0]]);
  });

  it('a delete recorded and never published is sent again by the next check, the same command', async () => {
    const iname = await listedInstance('lost-3');
    const provider = depsWith(recordingBus()).registry.get('later');
    const dying = dyingBus();
    void createRegistry({ config, relays, bus: dying, logger, now }).get('later')?.delete(iname);
    await dying.reached;
    const recorded = await relays.command(RELAY, iname);
    expect(recorded).toMatchObject({ kind: 'delete', done: false });

    clock += 1000;
    const bus = recordingBus();
    await createRegistry({ config, relays, bus, logger, now }).get('later')?.delete(iname);
    expect(bus.commands).toEqual([expect.objectContaining({ kind: 'delete', commandId: recorded?.commandId })]);
    await expect(provider?.get(iname)).resolves.toMatchObject({ state: 'Terminated' });
  });

  it('a delete waiting in the queue of the relay that has run since it was sent is not sent again until QUEUED_RESENDS delays have passed', async () => {
    bootStartedAt = clock - 1000;
    const iname = await listedInstance('queued-2');
    const first = recordingBus();
    await heartbeat();
    await createRegistry({ config, relays, bus: first, logger, now }).get('later')?.delete(iname);
    expect(first.commands).toEqual([expect.objectContaining({ kind: 'delete' })]);

    // The reconcile asks again every look while the instance is listed; the same boot reports.
    for (let i = 1; i < QUEUED_RESENDS; i++) {
      clock += RESEND_SECONDS * 1000;
      await heartbeat();
      const early = recordingBus();
      await createRegistry({ config, relays, bus: early, logger, now }).get('later')?.delete(iname);
      expect(early.commands, `after ${i} resend delays`).toEqual([]);
    }
    clock += RESEND_SECONDS * 1000 + 1000;
    await heartbeat();
    const late = recordingBus();
    await createRegistry({ config, relays, bus: late, logger, now }).get('later')?.delete(iname);
    expect(late.commands).toEqual([first.commands[0]]);
  });

  it('a delete sent to a relay that restarted since is sent again after commandResendSeconds', async () => {
    const iname = await listedInstance('lost-4');
    const first = recordingBus();
    await heartbeat();
    await createRegistry({ config, relays, bus: first, logger, now }).get('later')?.delete(iname);
    bootStartedAt = clock + 1000;
    clock += (RESEND_SECONDS - 1) * 1000;
    await heartbeat();
    const early = recordingBus();
    await createRegistry({ config, relays, bus: early, logger, now }).get('later')?.delete(iname);
    expect(early.commands).toEqual([]);
    clock += 2000;
    await heartbeat();
    const late = recordingBus();
    await createRegistry({ config, relays, bus: late, logger, now }).get('later')?.delete(iname);
    expect(late.commands).toEqual([first.commands[0]]);
  });
});
