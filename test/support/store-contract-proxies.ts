/**
 * `ProxyRepository` for every store (run inside `describe('store contract: <name>')`): ordering by
 * publish time and tombstones, leases and the fences of a status write, finalising, credentials per
 * incarnation, events, pages and counts, and concurrent writes on one proxy.
 */
import { expect, it } from 'vitest';
import { initialStatus, PHASES, type ProxyStatus } from '../../shared/domain/status.js';
import type { ProxyRepository } from '../../shared/store/ports.js';
import { proxyRequest, T } from './store-contract-requests.js';

const provisioning: ProxyStatus = { ...initialStatus(), phase: 'Provisioning' };
const readAt = async (proxies: ProxyRepository, n: string) => (await proxies.get(n))?.readAt ?? 'absent';

export function proxyContract(open: () => Promise<ProxyRepository>): void {
  it('applies by publish time: duplicates are unchanged, late requests stale', async () => {
    const proxies = await open();
    expect(await proxies.apply(proxyRequest('a-1', 1), T + 10, T)).toBe('created');
    expect(await proxies.apply(proxyRequest('a-1', 1), T + 10, T)).toBe('unchanged');
    expect(await proxies.apply(proxyRequest('a-1', 2), T + 5, T)).toBe('stale');
    expect(await proxies.apply(proxyRequest('a-1', 3), T + 20, T)).toBe('updated');
    const stored = await proxies.get('a-1');
    expect(stored?.doc).toMatchObject({ generation: 2, requestTime: T + 20, spec: { port: 3 } });
    expect(await proxies.apply(proxyRequest('a-1', 3, { team: 'x' }), T + 30, T)).toBe('updated');
    expect((await proxies.get('a-1'))?.doc).toMatchObject({ generation: 2, metadata: { labels: { team: 'x' } } });
    await expect(
      proxies.apply({ ...proxyRequest('a-1'), spec: { ...proxyRequest('a-1').spec, provider: 'other' } }, T + 40, T),
    ).rejects.toMatchObject({ field: 'spec.provider' });
  });

  it('a delete leaves a tombstone: an apply published before it stays dead; a newer one creates', async () => {
    const proxies = await open();
    expect(await proxies.requestDelete('t-1', T + 10, T)).toBe('absent');
    expect(await proxies.apply(proxyRequest('t-1'), T + 5, T)).toBe('stale');
    expect(await proxies.get('t-1')).toBeUndefined();
    expect(await proxies.apply(proxyRequest('t-1'), T + 20, T)).toBe('created');
    expect(await proxies.requestDelete('t-1', T + 15, T)).toBe('stale');
    expect(await proxies.requestDelete('t-1', T + 30, T)).toBe('marked');
    expect(await proxies.requestDelete('t-1', T + 40, T)).toBe('already');
    expect(await proxies.apply(proxyRequest('t-1'), T + 35, T)).toBe('stale');
    const marked = (await proxies.get('t-1'))?.doc;
    expect(marked).toMatchObject({ generation: 2, requestTime: T + 40 });
    expect(marked?.deletionRequestedAt).toBeDefined();
    // A newer apply undeletes.
    expect(await proxies.apply(proxyRequest('t-1'), T + 50, T)).toBe('updated');
    expect((await proxies.get('t-1'))?.doc.deletionRequestedAt).toBeUndefined();
  });

  it('one lease holder at a time; an expired lease is taken over; the holder releases it', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('l-1'), T, T);
    expect(await proxies.acquireLease('l-1', 'a', 1, 30_000, () => T, await readAt(proxies, 'l-1'))).toBe(T + 30_000);
    expect(await proxies.acquireLease('l-1', 'b', 1, 30_000, () => T + 1, await readAt(proxies, 'l-1'))).toBe(
      undefined,
    );
    expect((await proxies.get('l-1'))?.doc.lease).toEqual({ holder: 'a', until: T + 30_000, generation: 1 });
    const later = () => T + 31_000;
    expect(await proxies.acquireLease('l-1', 'b', 1, 30_000, later, await readAt(proxies, 'l-1'))).toBe(T + 61_000);
    expect(await proxies.writeStatus('l-1', 1, provisioning, T + 31_500, 'b')).toBe(true);
    expect((await proxies.get('l-1'))?.doc.lease).toBeUndefined();
  });

  it('fences: a moved generation, a lost lease and a stale readAt are refused', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('f-1'), T, T);
    const first = await proxies.get('f-1');
    if (!first) throw new Error('no document');
    // The document is written after the read: the decision's basis is stale, whatever copy it holds.
    expect(await proxies.writeStatus('f-1', 1, provisioning, T)).toBe(true);
    const clone = structuredClone(first);
    expect(await proxies.acquireLease('f-1', 'a', 1, 30_000, () => T, clone.readAt)).toBeUndefined();
    expect(await proxies.acquireLease('f-1', 'a', 1, 30_000, () => T, await readAt(proxies, 'f-1'))).toBe(T + 30_000);
    // Not the holder: refused while a's lease lives, and a writes only while it holds the lease.
    expect(await proxies.writeStatus('f-1', 1, provisioning, T + 1)).toBe(false);
    expect(await proxies.writeStatus('f-1', 1, provisioning, T + 1, 'b')).toBe(false);
    expect(await proxies.acquireLease('f-1', 'b', 1, 30_000, () => T + 40_000, await readAt(proxies, 'f-1'))).toBe(
      T + 70_000,
    );
    expect(await proxies.writeStatus('f-1', 1, { ...provisioning, phase: 'Failed' }, T + 40_001, 'a')).toBe(false);
    // A generation moved by a newer spec.
    await proxies.apply(proxyRequest('f-1', 9), T + 1, T);
    expect(await proxies.writeStatus('f-1', 1, provisioning, T + 40_002, 'b')).toBe(false);
    expect(await proxies.acquireLease('f-1', 'c', 1, 1, () => T + 80_000, await readAt(proxies, 'f-1'))).toBe(
      undefined,
    );
    expect((await proxies.get('f-1'))?.doc.status.phase).toBe('Provisioning');
  });

  it('a status write decided on a stale copy (basis) is decided again on the stored document', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('b-1'), T, T);
    const stale = await proxies.get('b-1');
    if (!stale) throw new Error('no document');
    // Current basis: written. Then a newer spec moves the generation: the stale basis says 1 may write, the store refuses.
    expect(await proxies.writeStatus('b-1', 1, provisioning, T, undefined, stale)).toBe(true);
    await proxies.apply(proxyRequest('b-1', 9), T + 1, T);
    expect(await proxies.writeStatus('b-1', 1, { ...provisioning, phase: 'Failed' }, T + 2, undefined, stale)).toBe(
      false,
    );
    // A stale basis that would refuse (generation 2 unknown to it) is read again and written.
    const current = await proxies.get('b-1');
    if (!current) throw new Error('no document');
    const generation = current.doc.generation;
    expect(await proxies.writeStatus('b-1', generation, provisioning, T + 3, undefined, stale)).toBe(true);
    expect((await proxies.get('b-1'))?.doc.status.phase).toBe('Provisioning');
    // A basis of a finalised proxy writes nothing.
    expect(await proxies.requestDelete('b-1', T + 10, T)).toBe('marked');
    const deleting = await proxies.get('b-1');
    if (!deleting) throw new Error('no document');
    expect(await proxies.finalise('b-1', deleting.doc.generation)).toBe(true);
    expect(await proxies.writeStatus('b-1', deleting.doc.generation, provisioning, T + 4, undefined, deleting)).toBe(
      false,
    );
  });

  it('a status write keeps the stored report-owned fields', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('s-1'), T, T);
    expect(
      await proxies.writeStatus(
        's-1',
        1,
        {
          ...provisioning,
          reports: { banned: 1, blocked: 0, error: 0, lastAt: new Date(T).toISOString(), targets: [] },
        },
        T,
      ),
    ).toBe(true);
    expect((await proxies.get('s-1'))?.doc.status.reports).toBeUndefined();
  });

  it('finalise removes a deleted proxy, its credentials and events, and leaves a tombstone', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('d-1'), T, T);
    await proxies.addEvent('d-1', { at: new Date(T).toISOString(), type: 'Normal', reason: 'x', message: 'y' }, 5);
    expect(await proxies.finalise('d-1', 1)).toBe(false);
    await proxies.requestDelete('d-1', T + 10, T);
    expect(await proxies.finalise('d-1', 1)).toBe(false);
    expect(await proxies.finalise('d-1', 2)).toBe(true);
    expect(await proxies.get('d-1')).toBeUndefined();
    expect(await proxies.credentials('d-1')).toBeUndefined();
    expect(await proxies.events('d-1')).toEqual([]);
    expect(await proxies.apply(proxyRequest('d-1'), T + 10, T)).toBe('stale');
    expect(await proxies.apply(proxyRequest('d-1'), T + 11, T)).toBe('created');
  });

  it('credentials are written once per incarnation and remembered per incarnation', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('c-1'), T, T);
    const first = await proxies.credentials('c-1', { incarnation: 'one', fresh: true });
    expect(first?.password.length).toBeGreaterThanOrEqual(20);
    await proxies.apply(proxyRequest('c-1', 5), T + 1, T);
    expect(await proxies.credentials('c-1')).toEqual(first);
    await proxies.requestDelete('c-1', T + 2, T);
    await proxies.finalise('c-1', 3);
    await proxies.apply(proxyRequest('c-1'), T + 3, T);
    const second = await proxies.credentials('c-1');
    expect(second).toBeDefined();
    expect(second).not.toEqual(first);
    // Remembered for the old incarnation until read fresh or forgotten.
    expect(await proxies.credentials('c-1', { incarnation: 'one' })).toEqual(first);
    proxies.forgetCredentials('c-1');
    expect(await proxies.credentials('c-1', { incarnation: 'one' })).toEqual(second);
  });

  it("a lease taken for a create stores the new instance's credentials with it; a refused one stores nothing", async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('n-1'), T, T);
    const basis = await readAt(proxies, 'n-1');
    const fresh = { username: 'u-n-1', password: 'fresh-password-0123456789' };
    expect(await proxies.acquireLease('n-1', 'a', 1, 30_000, () => T, basis, fresh)).toBe(T + 30_000);
    expect(await proxies.credentials('n-1')).toEqual(fresh);
    const refused = { username: 'u-n-1', password: 'refused-password-0123456789' };
    expect(await proxies.acquireLease('n-1', 'b', 1, 30_000, () => T + 1, basis, refused)).toBeUndefined();
    expect(await proxies.credentials('n-1')).toEqual(fresh);
  });

  it('events: newest first, trimmed to the newest `keep`', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('e-1'), T, T);
    const event = (i: number) => ({
      at: new Date(T + i).toISOString(),
      type: 'Normal' as const,
      reason: `r${i}`,
      message: '',
    });
    for (const i of [1, 2, 3, 4]) await proxies.addEvent('e-1', event(i), 3);
    expect((await proxies.events('e-1')).map((e) => e.reason)).toEqual(['r4', 'r3', 'r2']);
    await proxies.trimEvents('e-1', 1);
    expect(await proxies.events('e-1', 5)).toEqual([event(4)]);
  });

  it('pages, lists, names and counts', async () => {
    const proxies = await open();
    for (const n of ['p-3', 'p-1', 'p-2']) await proxies.apply(proxyRequest(n), T, T);
    await proxies.writeStatus('p-2', 1, { ...initialStatus(), phase: 'Replacing' }, T);
    const first = await proxies.page(null, 2);
    expect(first.items.map((i) => i.doc.metadata.name)).toEqual(['p-1', 'p-2']);
    expect(first.next).toBe('p-2');
    const second = await proxies.page(first.next, 2);
    expect(second.items.map((i) => i.doc.metadata.name)).toEqual(['p-3']);
    expect(second.next).toBeNull();
    expect((await proxies.list()).map((d) => d.metadata.name)).toEqual(['p-1', 'p-2', 'p-3']);
    expect(await proxies.names()).toEqual(new Set(['p-1', 'p-2', 'p-3']));
    const counts = await proxies.countByPhase();
    expect(Object.keys(counts).sort()).toEqual([...PHASES].sort());
    expect(counts).toMatchObject({ Pending: 2, Replacing: 1, Ready: 0 });
    expect(await proxies.rolloutCounts('local')).toEqual({ replacing: 1, proxies: 3 });
    expect(await proxies.rolloutCounts('other')).toEqual({ replacing: 0, proxies: 0 });
  });

  it('finds live peers sharing an egress IP', async () => {
    const proxies = await open();
    for (const n of ['i-1', 'i-2', 'i-3']) await proxies.apply(proxyRequest(n), T, T);
    const health = {
      ok: true,
      lastProbeAt: new Date(T).toISOString(),
      consecutiveFailures: 0,
      egressIp: '192.0.2.7',
    };
    for (const n of ['i-1', 'i-2', 'i-3']) await proxies.writeStatus(n, 1, { ...initialStatus(), health }, T);
    await proxies.requestDelete('i-3', T + 1, T);
    expect(await proxies.sharingEgressIp('192.0.2.7', 'i-1')).toEqual(['i-2']);
    expect(await proxies.sharingEgressIp('192.0.2.8', 'i-1')).toEqual([]);
  });

  it('concurrent writes on one proxy: each is decided on what the other wrote', async () => {
    const proxies = await open();
    await proxies.apply(proxyRequest('x-1'), T, T);
    const basis = await readAt(proxies, 'x-1');
    const leases = await Promise.all(
      ['a', 'b', 'c'].map((holder) => proxies.acquireLease('x-1', holder, 1, 30_000, () => T, basis)),
    );
    expect(leases.filter((l) => l !== undefined)).toHaveLength(1);
    const applies = await Promise.all([1, 2, 3].map((i) => proxies.apply(proxyRequest('x-1', i), T + i, T)));
    expect(applies.filter((o) => o === 'updated').length).toBeGreaterThanOrEqual(1);
    expect((await proxies.get('x-1'))?.doc.spec.port).toBe(3);
  });
}
