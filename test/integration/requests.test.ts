/** Requests on the real Firestore emulator: validation, redelivery, reordering, immutability, leases. */
import { PubSub } from '@google-cloud/pubsub';
import { DocumentReference } from '@google-cloud/firestore';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { decodeBody } from '../../shared/bus/message.js';
import { createPubSubBus } from '../../shared/bus/pubsub.js';
import { createLogger } from '../../shared/logger.js';
import { handleRequest, type RequestDeps } from '../../shared/requests.js';
import { createFirestore } from '../../shared/store/firestore/client.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { initialStatus } from '../../shared/domain/status.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('requests');
const db = createFirestore(emu.projectId);
const logger = createLogger({ write: () => undefined });
const proxies = new FirestoreProxyRepository(db, logger);
let deps: RequestDeps;
let seq = 0;

const apply = (name: string, over: Record<string, unknown> = {}) => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name, labels: { team: 'a' } },
  spec: { provider: 'local', ...over },
});
const del = (name: string) => ({ apiVersion: 'egress.dev/v1', kind: 'Proxy', action: 'delete', metadata: { name } });
const msg = (body: unknown, publishTime = Date.now(), id = `m${++seq}`) =>
  decodeBody(id, publishTime, {}, typeof body === 'string' ? body : JSON.stringify(body));
const handle = (m: ReturnType<typeof msg>) => handleRequest(deps, m);

beforeAll(async () => {
  const pubsub = new PubSub({ projectId: emu.projectId });
  await pubsub.createTopic('proxy-checks');
  deps = { proxies, bus: createPubSubBus(pubsub), logger, maxEvents: 5 };
});

describe('requests', () => {
  it('the same request delivered three times yields one proxy and one set of credentials', async () => {
    const m = msg(apply('dup-1'));
    expect(await handle(m)).toBe('created');
    const creds = await proxies.credentials('dup-1');
    expect(await handle(m)).toBe('unchanged');
    expect(await handle(m)).toBe('unchanged');
    const doc = (await proxies.get('dup-1'))?.doc;
    expect(doc?.generation).toBe(1);
    expect(await proxies.credentials('dup-1')).toEqual(creds);
    expect(creds?.password.length).toBeGreaterThanOrEqual(20);
  });

  it.each([
    ['not JSON', '{"apiVersion": ', '(message)'],
    ['an invalid name', apply('Bad_Name'), 'metadata.name'],
    ['a name too long', apply('a'.repeat(64)), 'metadata.name'],
    ['an unknown action', { ...apply('x'), action: 'explode' }, 'action'],
    ['a port out of range', apply('p1', { port: 70000 }), 'spec.port'],
    ['an unknown spec field', apply('p2', { color: 'red' }), 'spec'],
    ['an invalid maxAge', apply('p3', { maxAge: 'soon' }), 'spec.maxAge'],
    ['a wrong apiVersion', { ...apply('p4'), apiVersion: 'v2' }, 'apiVersion'],
  ])('a request with %s is rejected naming the field, once', async (_what, body, field) => {
    const m = msg(body);
    expect(await handle(m)).toBe('rejected');
    const rejection = await db.collection('rejections').doc(m.id).get();
    expect(rejection.get('field')).toBe(field);
    expect(String(rejection.get('reason'))).not.toBe('');
  });

  it('an empty message is rejected with a reason', async () => {
    const m = msg('');
    await handle(m);
    expect((await db.collection('rejections').doc(m.id).get()).get('reason')).toMatch(/no data/);
  });

  it('spec.provider is immutable', async () => {
    await handle(msg(apply('imm-1')));
    const m = msg(apply('imm-1', { provider: 'other' }));
    expect(await handle(m)).toBe('rejected');
    expect((await db.collection('rejections').doc(m.id).get()).get('field')).toBe('spec.provider');
    expect((await proxies.get('imm-1'))?.doc.spec.provider).toBe('local');
  });

  it('a spec change bumps the generation; a label change does not', async () => {
    const t = Date.now();
    await handle(msg(apply('gen-1'), t));
    await handle(msg({ ...apply('gen-1'), metadata: { name: 'gen-1', labels: { team: 'b' } } }, t + 1));
    expect((await proxies.get('gen-1'))?.doc.generation).toBe(1);
    await handle(msg(apply('gen-1', { port: 20500 }), t + 2));
    // Apply is declarative: the latest request's labels win.
    expect((await proxies.get('gen-1'))?.doc).toMatchObject({
      generation: 2,
      spec: { port: 20500 },
      metadata: { labels: { team: 'a' } },
    });
  });

  it('an older apply delivered after a newer one is stale', async () => {
    const t = Date.now();
    await handle(msg(apply('ord-1', { port: 20601 }), t + 10));
    expect(await handle(msg(apply('ord-1', { port: 20600 }), t))).toBe('stale');
    expect((await proxies.get('ord-1'))?.doc.spec.port).toBe(20601);
  });

  it('a delete delivered before its older apply leaves nothing to resurrect', async () => {
    const t = Date.now();
    expect(await handle(msg(del('ord-2'), t + 10))).toBe('absent');
    expect(await handle(msg(apply('ord-2'), t))).toBe('stale');
    expect(await proxies.get('ord-2')).toBeUndefined();
    expect(await handle(msg(apply('ord-2'), t + 20))).toBe('created');
  });

  it('delete marks the proxy; a later apply takes it back', async () => {
    const t = Date.now();
    await handle(msg(apply('del-1'), t));
    expect(await handle(msg(del('del-1'), t + 1))).toBe('marked');
    expect(await handle(msg(del('del-1'), t + 1))).toBe('already');
    expect((await proxies.get('del-1'))?.doc.deletionRequestedAt).toBeDefined();
    await handle(msg(apply('del-1'), t + 2));
    expect((await proxies.get('del-1'))?.doc.deletionRequestedAt).toBeUndefined();
  });
});

describe('leases and generation fencing', () => {
  it('one lease holder at a time; a write for an old generation is discarded', async () => {
    await handle(msg(apply('lease-1')));
    const now = Date.now();
    // Each attempt decides on a fresh read: only the lease (or the generation) refuses it.
    const readAt = async () => (await proxies.get('lease-1'))?.readAt ?? '';
    expect(await proxies.acquireLease('lease-1', 'a', 1, 30_000, () => now, await readAt())).toBe(now + 30_000);
    expect(await proxies.acquireLease('lease-1', 'b', 1, 30_000, () => now, await readAt())).toBeUndefined();
    const status = { ...initialStatus(), phase: 'Provisioning' as const };
    expect(await proxies.writeStatus('lease-1', 1, status, now, 'b')).toBe(false);
    expect(await proxies.writeStatus('lease-1', 1, status, now, 'a')).toBe(true);
    expect((await proxies.get('lease-1'))?.doc.lease).toBeUndefined();
    expect(await proxies.writeStatus('lease-1', 0, status, now)).toBe(false);
    expect(await proxies.acquireLease('lease-1', 'b', 1, 30_000, () => now, await readAt())).toBe(now + 30_000);
    // An expired lease can be taken over.
    const later = () => now + 31_000;
    expect(await proxies.acquireLease('lease-1', 'c', 1, 30_000, later, await readAt())).toBe(now + 61_000);
  });

  it('a lease decided on the document as read costs no read while it is unchanged; one written since is read again and refused', async () => {
    await handle(msg(apply('lease-2')));
    const now = Date.now();
    const stored = await proxies.get('lease-2');
    if (!stored) throw new Error('no lease-2');
    const reads = vi.spyOn(DocumentReference.prototype, 'get');
    try {
      expect(
        await proxies.acquireLease('lease-2', 'a', 1, 30_000, () => now, stored.readAt, undefined, stored.doc),
      ).toBe(now + 30_000);
      expect(reads).not.toHaveBeenCalled();
      // Written since (the lease above): the copy's precondition fails, a fresh read decides, and
      // the lease is refused (held by a, and the document changed after readAt).
      expect(
        await proxies.acquireLease('lease-2', 'b', 1, 30_000, () => now + 31_000, stored.readAt, undefined, stored.doc),
      ).toBeUndefined();
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
    }
  });

  it('events stay bounded', async () => {
    await handle(msg(apply('ev-1')));
    for (let i = 0; i < 9; i++)
      await proxies.addEvent(
        'ev-1',
        { at: new Date(Date.now() + i).toISOString(), type: 'Normal', reason: 'T', message: `e${i}` },
        5,
      );
    const events = await proxies.events('ev-1', 100);
    expect(events).toHaveLength(5);
    expect(events[0]?.message).toBe('e8');
  });
});
