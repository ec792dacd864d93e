/**
 * The relay-backed provider reads an instance's inventory item and its last command at one read
 * time. Read apart, a report stored between the two reads (the create applied: the item listed and
 * the command marked done in one batch) made a running instance look gone: the item read before
 * the report, the command after it. A proxy being deleted whose create status write had been
 * fenced off (`everCreated` unset) was then finalised without a delete, and its instance leaked —
 * as the redelivery guarantee suite found over Firestore's REST transport, whose separate HTTP/1.1
 * requests leave such a gap more often than gRPC's one channel.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../shared/config/load.js';
import { instanceName } from '../../shared/domain/names.js';
import { createLogger } from '../../shared/logger.js';
import { createRegistry } from '../../shared/providers/registry.js';
import type { RelayReport } from '../../shared/wire/protocol.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreRelayRepository } from '../../shared/store/firestore/relays.js';
import { emulatorEnv } from '../support/emulator-env.js';

const RELAY = 'readtime';
const emu = emulatorEnv('readtime');
const logger = createLogger({ write: () => undefined });
const relays = new FirestoreRelayRepository(createFirestore(emu.projectId), logger);
const config = parseConfig({
  installationId: 'it',
  echoUrl: 'http://127.0.0.1:9/',
  providers: [{ name: 'proc', type: 'process', relay: RELAY }],
});
const NAME = instanceName('it', 'rt-1');
const ISSUED = Date.now();

/** The relay's report after applying create `c1`: the instance listed, the command's result. */
const applied = (seq: number): RelayReport => ({
  relay: RELAY,
  bootId: 'boot',
  seq,
  sentAt: Date.now(),
  startedAt: ISSUED,
  providers: [{ name: 'proc', type: 'process', ok: true, message: 'ok' }],
  instances: [
    {
      name: NAME,
      proxy: 'rt-1',
      provider: 'proc',
      installationId: 'it',
      specHash: 'h1',
      state: 'Running',
      ip: '127.0.0.1',
      port: 1,
      createdAt: ISSUED,
    },
  ],
  results: [{ commandId: 'c1', provider: 'proc', name: NAME, kind: 'create', ok: true }],
});

/**
 * The store as a provider sees it while that report lands after its first read of this instance
 * completes: every later read of it starts only once the report is stored.
 */
function reportLandingAfterFirstRead(store: FirestoreRelayRepository): FirestoreRelayRepository {
  let landed: Promise<void> | undefined;
  const read = async <T>(call: () => Promise<T>): Promise<T> => {
    if (landed) {
      await landed;
      return call();
    }
    let first: T | undefined;
    landed = call().then(async (value) => {
      first = value;
      await store.applyReport(applied(2), Date.now());
    });
    await landed;
    return first as T;
  };
  const racing = Object.create(store) as FirestoreRelayRepository;
  racing.instance = (relay, name) => read(() => store.instance(relay, name));
  racing.command = (relay, name) => read(() => store.command(relay, name));
  racing.instanceAndCommand = (relay, name) => read(() => store.instanceAndCommand(relay, name));
  return racing;
}

describe('the relay-backed provider observes an instance at one read time', () => {
  it('a report storing a just-applied create between its reads never makes the instance NotFound', async () => {
    const heartbeat = { ...applied(1), instances: [], results: [] };
    await relays.applyReport(heartbeat, Date.now());
    await relays.recordCommand(RELAY, NAME, {
      commandId: 'c1',
      kind: 'create',
      issuedAt: ISSUED,
      provider: 'proc',
      proxy: 'rt-1',
      specHash: 'h1',
    });
    await relays.markSent(RELAY, NAME, 'c1', ISSUED);
    const bus = { publish: () => Promise.resolve('unused') };
    const registry = createRegistry({ config, relays: reportLandingAfterFirstRead(relays), bus, logger });
    const seen = await registry.get('proc')?.get(NAME);
    // Before the report: the create is pending; after it: the instance runs. Never "gone".
    expect(['Pending', 'Running']).toContain(seen?.state);
    expect(await relays.instance(RELAY, NAME)).toMatchObject({ state: 'Running' });
  });
});
