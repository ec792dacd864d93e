/** Events and rejections carry the `expireAt` timestamp that the Firestore TTL policies (infra/terraform/firestore.tf) delete by. */
import { Timestamp } from '@google-cloud/firestore';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import { COLLECTIONS, createFirestore } from '../../shared/store/firestore/client.js';
import { trimQuery } from '../../shared/store/firestore/events.js';
import { EVENT_RETENTION_MS } from '../../shared/store/records.js';
import { FirestoreProxyRepository } from '../../shared/store/firestore/proxies.js';
import { REJECTION_RETENTION_MS } from '../../shared/store/proxy-rules.js';
import { emulatorEnv } from '../support/emulator-env.js';

const emu = emulatorEnv('retention');
const db = createFirestore(emu.projectId);
const proxies = new FirestoreProxyRepository(db, createLogger({ write: () => undefined }));

describe('retention fields', () => {
  it('an event expires EVENT_RETENTION_MS after it happened, as a Firestore timestamp', async () => {
    const at = '2026-01-02T03:04:05.000Z';
    await proxies.addEvent('ttl-1', { at, type: 'Normal', reason: 'Accepted', message: 'm' }, 5);
    const snap = await db.collection(COLLECTIONS.proxies).doc('ttl-1').collection('events').get();
    expect(snap.size).toBe(1);
    const expireAt: unknown = snap.docs[0]?.get('expireAt');
    expect(expireAt instanceof Timestamp && expireAt.toMillis()).toBe(Date.parse(at) + EVENT_RETENTION_MS);
    // Readers see the event as before.
    expect(await proxies.events('ttl-1')).toEqual([{ at, type: 'Normal', reason: 'Accepted', message: 'm' }]);
  });

  it('a rejection expires REJECTION_RETENTION_MS after it was recorded', async () => {
    const now = Date.parse('2026-02-03T04:05:06.000Z');
    await proxies.reject('msg-1', { code: 'Validation', message: 'bad', field: 'spec' }, '{}', 'proxy-requests', now);
    const expireAt: unknown = (await db.collection(COLLECTIONS.rejections).doc('msg-1').get()).get('expireAt');
    expect(expireAt instanceof Timestamp && expireAt.toMillis()).toBe(now + REJECTION_RETENTION_MS);
  });

  it('the trim query can be resumed after any document it returned (the client resumes a broken stream so)', async () => {
    for (const [i, at] of ['2026-01-01', '2026-01-02', '2026-01-03'].entries())
      await proxies.addEvent(
        'trim-1',
        { at: `${at}T00:00:00.000Z`, type: 'Normal', reason: `R${i}`, message: 'm' },
        10,
      );
    const events = db.collection(COLLECTIONS.proxies).doc('trim-1').collection('events');
    const query = trimQuery(events, 1);
    const past = await query.get();
    expect(past.docs.map((d) => d.get('at') as unknown)).toEqual([
      '2026-01-02T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
    ]);
    // What the client does after a stream error: startAfter the last document received.
    const [first] = past.docs;
    if (!first) throw new Error('no event past the newest');
    expect(() => query.startAfter(first)).not.toThrow();
  });
});
