/**
 * A ban on a real local process proxy: reported through the API, the reconcile replaces it in place
 * (same name) with a fresh instance whose egress IP, measured through the proxy against the echo
 * endpoint, differs, and whose password is new (the old one is refused); late and repeated reports
 * do not replace it again; a pool member is left alone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiDeps } from '../../shared/api/deps.js';
import type { ProxyDoc } from '../../shared/domain/status.js';
import { probeThroughProxy } from '../../shared/probe/probe.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import { callApi } from '../support/api-call.js';
import { eventually } from '../support/eventually.js';
import { applyRequest, settle } from '../support/reconcile-steps.js';
import { proxyPorts, startRelayHarness, type RelayHarness } from '../support/relay-harness.js';
import { markPoolMember } from '../support/pool-member.js';

const TOKEN = 'ban-test-token-0123456789';
let h: RelayHarness;
let deps: CheckDeps;
let api: ApiDeps;

const report = (name: string, body: Record<string, unknown>) =>
  callApi(api, 'POST', `/v1/proxies/${name}/reports`, body, TOKEN);
const doc = async (name: string): Promise<ProxyDoc> => {
  const found = (await h.proxies.get(name))?.doc;
  if (!found) throw new Error(`no proxy ${name}`);
  return found;
};
/** The egress IP as the echo endpoint sees a request through the proxy (not the stored probe result). */
async function measuredEgress(name: string): Promise<string | undefined> {
  const d = await doc(name);
  const [host, port] = (d.status.address ?? ':').split(':');
  const creds = await h.proxies.credentials(name);
  const result = await probeThroughProxy({
    host: host ?? '',
    port: Number(port),
    username: creds?.username ?? '',
    password: creds?.password ?? '',
    echoUrl: h.echo.url,
    timeoutMs: 3000,
  });
  expect(result.ok, result.error).toBe(true);
  return result.egressIp;
}
const createdAt = async (name: string) => (await doc(name)).status.instance?.createdAt;

/** b-1, p-1 and b-1's replacements, with room to spare. */
const PORTS = proxyPorts(24500, 6);

beforeAll(async () => {
  h = await startRelayHarness(
    'ban',
    PORTS,
    { apiTokens: [TOKEN] },
    {
      backends: (stateDir) => [
        {
          provider: 'proc',
          type: 'process',
          stateDir,
          bindAddresses: ['127.0.0.1'],
          portRange: PORTS,
          egressAddresses: '127.5.0.0/24',
        },
      ],
    },
  );
  deps = { config: h.config, proxies: h.proxies, registry: h.registry, logger: h.logger, bus: h.bus };
  api = {
    ...deps,
    relays: h.relays,
    reports: new FirestoreReportRepository(h.db, h.logger),
    providerStatus: h.providerStatus,
  };
  await h.proxies.apply(applyRequest('b-1', 'proc'), Date.now(), Date.now());
  await h.proxies.apply(applyRequest('p-1', 'proc'), Date.now(), Date.now());
  await markPoolMember(h.db, 'p-1', 'p');
  await settle(deps, 'b-1', (p) => p === 'Ready', 30_000, 300);
  await settle(deps, 'p-1', (p) => p === 'Ready', 30_000, 300);
}, 90_000);
afterAll(() => h?.close(), 60_000);

describe('a ban replaces a lone proxy in place with a new egress IP', { timeout: 60_000 }, () => {
  it('each local proxy leaves from its own loopback address', async () => {
    const a = await measuredEgress('b-1');
    const b = await measuredEgress('p-1');
    expect(a).toMatch(/^127\.5\.0\.\d+$/);
    expect(b).toMatch(/^127\.5\.0\.\d+$/);
    expect(a).not.toBe(b);
    expect((await doc('b-1')).status.health?.egressIp).toBe(a);
  });

  it('banned without a target: same name, a fresh instance, a different egress IP; once', async () => {
    const before = await measuredEgress('b-1');
    const oldCreatedAt = await createdAt('b-1');
    const oldCredentials = await h.proxies.credentials('b-1');
    expect(await report('b-1', { reason: 'banned', requestId: 'ban-1' })).toMatchObject({
      status: 202,
      body: { banned: true, ban: { egressIp: before } },
    });
    const phases = new Set<string>();
    await eventually(
      async () => {
        await runCheck(deps, { names: ['b-1'] });
        const d = await doc('b-1');
        phases.add(d.status.phase);
        const replaced = d.status.instance?.createdAt !== oldCreatedAt;
        expect({ phase: d.status.phase, replaced }, 'b-1 replaced and Ready').toEqual({
          phase: 'Ready',
          replaced: true,
        });
      },
      40_000,
      300,
    );
    expect(phases).toContain('Replacing');
    const after = await measuredEgress('b-1');
    expect(after).toMatch(/^127\.5\.0\.\d+$/);
    expect(after).not.toBe(before);
    const replaced = await doc('b-1');
    expect(replaced.metadata.name).toBe('b-1');
    // The fresh instance has a password of its own: the banned instance's no longer opens it.
    expect((await h.proxies.credentials('b-1'))?.password).not.toBe(oldCredentials?.password);
    const [host, port] = (replaced.status.address ?? ':').split(':');
    const withOld = await probeThroughProxy({
      host: host ?? '',
      port: Number(port),
      username: oldCredentials?.username ?? '',
      password: oldCredentials?.password ?? '',
      echoUrl: h.echo.url,
      timeoutMs: 3000,
    });
    expect(withOld.ok).toBe(false);
    expect(withOld.error).toMatch(/answered 40[17]/);
    expect(replaced.status.ban?.egressIp).toBe(before);
    const reasons = (await h.proxies.events('b-1')).map((e) => e.reason);
    expect(reasons.filter((r) => r === 'Replace:banned').length).toBeGreaterThanOrEqual(1);

    // The same report again (a retry), and one observed before the replacement arriving late: counted, no ban.
    const fresh = await createdAt('b-1');
    expect(await report('b-1', { reason: 'banned', requestId: 'ban-1' })).toMatchObject({ body: { duplicate: true } });
    const late = await report('b-1', { reason: 'banned', observedAt: oldCreatedAt });
    expect(late).toMatchObject({ status: 202, body: { banned: false, stale: true } });
    for (let i = 0; i < 5; i++) await runCheck(deps, { names: ['b-1'] });
    expect(await createdAt('b-1')).toBe(fresh);
    expect((await doc('b-1')).status.phase).toBe('Ready');
    expect((await doc('b-1')).status.reports?.banned).toBe(2);
  });

  it('a banned pool member is not replaced in place (its pool surges), and discovery leaves it out', async () => {
    const before = await createdAt('p-1');
    expect(await report('p-1', { reason: 'banned' })).toMatchObject({ body: { banned: true } });
    for (let i = 0; i < 5; i++) await runCheck(deps, { names: ['p-1'] });
    const d = await doc('p-1');
    expect(d.status.instance?.createdAt).toBe(before);
    expect(d.status.phase).toBe('Ready');
    expect(d.status.ban).toBeDefined();
    const listed = await callApi(api, 'GET', '/v1/discovery?pool=p', undefined, TOKEN);
    expect(listed).toMatchObject({ status: 200, body: [] });
  });
});
