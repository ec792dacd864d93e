/**
 * Fresh credentials on every new instance, on the in-memory ports: a lone proxy replaced in place
 * (rotation past `maxAge`, a dead instance, a changed spec) gets a new password stored with the
 * lease its create is made under, and sealed for the relay in the command; repeated and stale
 * checks change nothing.
 */
import { describe, expect, it } from 'vitest';
import { applyRequest } from '../../test/support/reconcile-steps.js';
import { startMemoryFleet, type MemoryFleet } from '../../test/support/memory-fleet.js';
import { TOPICS } from '../bus/topics.js';
import { runCheck } from './check.js';

const NAME = 'fc-1';

async function ready(f: MemoryFleet): Promise<void> {
  for (let i = 0; i < 20; i++) {
    await runCheck(f.checkDeps, { names: [NAME] });
    await f.bus.deliver();
    if ((await f.proxies.get(NAME))?.doc.status.phase === 'Ready') return;
    f.clock.advance(2_000);
  }
  throw new Error(`${NAME} never became Ready`);
}

/** The password the live instance was created with, and the one stored for the proxy. */
async function passwords(f: MemoryFleet) {
  const instance = f.backend.instances.get(f.instance(NAME));
  return {
    createdAt: instance?.createdAt,
    instance: instance?.credentials.password,
    stored: (await f.proxies.credentials(NAME))?.password,
  };
}

async function fleetWith(spec: Record<string, unknown>): Promise<MemoryFleet> {
  const f = await startMemoryFleet({ config: { backoffBaseSeconds: 1, backoffMaxSeconds: 2, unhealthyAfter: 1 } });
  const request = applyRequest(NAME, 'local');
  await f.proxies.apply({ ...request, spec: { ...request.spec, ...spec } }, f.clock.now(), f.clock.now());
  await ready(f);
  return f;
}

describe('every new instance gets fresh credentials', () => {
  it('rotation past maxAge: the new instance has a new password, stored for the proxy', async () => {
    const f = await fleetWith({ maxAge: '1m' });
    const before = await passwords(f);
    expect(before.instance).toBe(before.stored);
    f.clock.advance(61_000);
    await ready(f);
    const after = await passwords(f);
    expect(after.createdAt).not.toBe(before.createdAt);
    expect(after.instance).toBe(after.stored);
    expect(after.stored).not.toBe(before.stored);
  });

  it('a dead instance: its replacement has a new password', async () => {
    const f = await fleetWith({});
    const before = await passwords(f);
    const instance = f.backend.instances.get(f.instance(NAME));
    if (!instance) throw new Error('no instance');
    instance.state = 'Terminated';
    await f.relayReport();
    await f.bus.deliver();
    await ready(f);
    const after = await passwords(f);
    expect(after.createdAt).not.toBe(before.createdAt);
    expect(after.instance).toBe(after.stored);
    expect(after.stored).not.toBe(before.stored);
  });

  it('a changed spec: the replacement has a new password', async () => {
    const f = await fleetWith({});
    const before = await passwords(f);
    const request = applyRequest(NAME, 'local');
    const changed = { ...request, spec: { ...request.spec, placement: { zone: 'other' } } };
    f.clock.advance(1_000);
    await f.proxies.apply(changed, f.clock.now(), f.clock.now());
    await ready(f);
    const after = await passwords(f);
    expect(after.createdAt).not.toBe(before.createdAt);
    expect(after.instance).toBe(after.stored);
    expect(after.stored).not.toBe(before.stored);
  });

  it('repeated checks of a live instance, and a check decided on a stale read, leave its password alone', async () => {
    const f = await fleetWith({});
    const stale = await f.proxies.get(NAME);
    const before = await passwords(f);
    for (let i = 0; i < 3; i++) await runCheck(f.checkDeps, { names: [NAME, NAME] });
    await f.bus.deliver();
    await f.bus.deliver();
    expect(await passwords(f)).toEqual(before);
    // A late check that decided to create on an old read: its lease, and the credentials with it, are refused.
    const lease = await f.proxies.acquireLease(NAME, 'late', 1, 30_000, () => f.clock.now(), stale?.readAt ?? '', {
      username: 'u-late',
      password: 'late-password',
    });
    expect(lease).toBeUndefined();
    expect(await passwords(f)).toEqual(before);
  });

  it('a create command on the wire carries its password sealed, never in clear', async () => {
    const f = await fleetWith({});
    const { stored } = await passwords(f);
    const commands = f.bus.published.filter(
      (m) => m.topic === TOPICS.relayCommands && m.attributes['kind'] === 'create',
    );
    expect(commands.length).toBeGreaterThan(0);
    for (const m of commands) {
      expect(m.message.text).not.toContain(stored ?? '-');
      expect(m.message.json).toMatchObject({ spec: { credentials: { keyId: 'k1' } } });
    }
  });
});
