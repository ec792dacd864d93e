/**
 * A proxy that is never reachable, through the real reconcile path: the emulators, a real relay
 * and real proxy processes advertised at an address the prober cannot reach (192.0.2.1, TEST-NET-1
 * of RFC 5737: what a firewall in front of the proxy port looks like from the prober). After
 * `neverReadyLimit` instances no more are created, the reason is stored and served by the API, no
 * instance is left running, and applying the same spec again resumes creation.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../shared/api/deps.js';
import type { ProxyDoc } from '../../shared/domain/status.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import type { RelayBackend } from '../../relay/backends/backend.js';
import { callApi } from '../support/api-call.js';
import { eventually } from '../support/eventually.js';
import { applyRequest } from '../support/reconcile-steps.js';
import { proxyPorts, startRelayHarness, type RelayHarness } from '../support/relay-harness.js';

const TOKEN = 'never-reachable-token-0123456789';
const LIMIT = 3;
let h: RelayHarness;
let deps: CheckDeps;
let api: ApiDeps;
let backend: RelayBackend | undefined;
/** Every instance the relay's backend created, by its createdAt (an adopted duplicate create counts once). */
const created = new Set<number>();

/** The relay's backend, counting the instances it creates. */
function counting(inner: RelayBackend): RelayBackend {
  backend = inner;
  return {
    name: inner.name,
    type: inner.type,
    probesRemotely: inner.probesRemotely,
    resolvePlacement: (placement) => inner.resolvePlacement(placement),
    create: async (spec) => {
      const instance = await inner.create(spec);
      created.add(instance.createdAt);
      return instance;
    },
    delete: (name) => inner.delete(name),
    get: (name) => inner.get(name),
    list: () => inner.list(),
    check: () => inner.check(),
    credentials: (name) => inner.credentials(name),
    close: () => inner.close(),
  };
}

const doc = async (name: string): Promise<ProxyDoc> => {
  const found = (await h.proxies.get(name))?.doc;
  if (!found) throw new Error(`no proxy ${name}`);
  return found;
};
/** Checks `name` (as kicks and redeliveries would) until it is Failed with nothing left on the backend. */
const untilStopped = (name: string) =>
  eventually(
    async () => {
      await runCheck(deps, { names: [name] });
      const d = await doc(name);
      const left = (await backend?.list())?.length;
      expect({ phase: d.status.phase, left }, `${name} stopped, no instance left`).toEqual({
        phase: 'Failed',
        left: 0,
      });
    },
    120_000,
    300,
  );

/** The LIMIT instances of u-1, one after another, with room to spare. */
const PORTS = proxyPorts(24520, 2 * LIMIT);

beforeAll(async () => {
  h = await startRelayHarness(
    'never-reachable',
    PORTS,
    { apiTokens: [TOKEN], unhealthyAfter: 2, neverReadyLimit: LIMIT },
    {
      backends: (stateDir) => [
        {
          provider: 'proc',
          type: 'process',
          stateDir,
          bindAddresses: ['127.0.0.1'],
          portRange: PORTS,
          advertiseHost: '192.0.2.1',
        },
      ],
      wrapBackend: counting,
    },
  );
  deps = { config: h.config, proxies: h.proxies, registry: h.registry, logger: h.logger, bus: h.bus };
  api = {
    ...deps,
    relays: h.relays,
    reports: new FirestoreReportRepository(h.db, h.logger),
    providerStatus: h.providerStatus,
  };
}, 90_000);
afterAll(() => h?.close(), 60_000);

describe('a proxy that is never reachable stops being replaced', { timeout: 300_000 }, () => {
  it('creates neverReadyLimit instances, then none; says why through the API; leaves none running', async () => {
    await h.proxies.apply(applyRequest('u-1', 'proc'), Date.now(), Date.now());
    await untilStopped('u-1');
    expect(created.size).toBe(LIMIT);

    // Kicks, redeliveries and sweeps keep coming: nothing is created and nothing counted twice.
    for (let i = 0; i < 10; i++) await runCheck(deps, { names: ['u-1'] });
    await runCheck(deps, { sweep: true });
    expect(created.size).toBe(LIMIT);
    expect(await backend?.list()).toEqual([]);
    const stopped = await doc('u-1');
    expect(stopped.status.unreachable).toMatchObject({ stopped: true, generation: 1 });
    expect(stopped.status.unreachable?.instances).toHaveLength(LIMIT);
    expect(stopped.status.unreachable?.address).toMatch(/^192\.0\.2\.1:2452\d$/);

    const got = await callApi(api, 'GET', '/v1/proxies/u-1', undefined, TOKEN);
    expect(got.status).toBe(200);
    const body = got.body as { status: ProxyDoc['status'] };
    expect(body.status.phase).toBe('Failed');
    const ready = body.status.conditions.find((c) => c.type === 'Ready');
    expect(ready?.reason).toBe('NeverReachable');
    expect(ready?.message).toContain(`${LIMIT} instances in a row never passed a probe through 192.0.2.1:`);
    expect(ready?.message).toContain('firewall');
    const events = await h.proxies.events('u-1', 50);
    expect(events.filter((e) => e.reason === 'Replace:unhealthy')).toHaveLength(LIMIT - 1);
    expect(events.find((e) => e.reason === 'Failed')).toMatchObject({ type: 'Warning' });
  });

  it('applying the same spec again resumes creation (with a fresh count)', async () => {
    const before = created.size;
    await h.proxies.apply(applyRequest('u-1', 'proc'), Date.now(), Date.now());
    expect((await doc('u-1')).generation).toBe(2);
    await eventually(
      async () => {
        await runCheck(deps, { names: ['u-1'] });
        expect(created.size).toBeGreaterThan(before);
      },
      30_000,
      300,
    );
    await untilStopped('u-1');
    const unreachable = (await doc('u-1')).status.unreachable;
    // Three new ones: not the last of generation 1, which the relay's inventory may still list (its
    // report comes a second or more after the delete) when generation 2's first check runs.
    const seen = [...created].map((ms) => new Date(ms).toISOString());
    expect(created.size, JSON.stringify({ seen, unreachable })).toBe(before + LIMIT);
    expect(unreachable).toMatchObject({ stopped: true, generation: 2 });
  });
});
