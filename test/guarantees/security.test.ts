/**
 * Security: per-proxy credentials come from the OS's secure random source and are stored apart
 * (never in a proxy's document, status, events, a relay's inventory or a log line, over a full
 * create/check/delete with a real relay and real proxy processes); only a caller with the right
 * API token gets them; tokens are compared in constant time; GC only touches its own installation.
 */
import * as crypto from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { handleApi } from '../../shared/api/handler.js';
import { tokenScope } from '../../shared/api/http.js';
import { instanceName } from '../../shared/domain/names.js';
import type { ApplyRequest } from '../../shared/domain/proxy.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { collectGarbage } from '../../shared/reconcile/gc.js';
import { generateCredentials } from '../../shared/store/credentials-memo.js';
import { FirestoreProviderStatusRepository } from '../../shared/store/firestore/providers.js';
import { FirestoreReportRepository } from '../../shared/store/firestore/reports.js';
import { eventually } from '../support/eventually.js';
import { startKubeHarness } from '../support/kube-harness.js';
import { proxyPorts, startRelayHarness, type RelayHarness } from '../support/relay-harness.js';
import { Figures } from './support/figures.js';
import { orphanSpec } from './support/orphans.js';
import { proxyProcesses } from './support/processes.js';

// The real module, with randomBytes observed: every call still goes to the OS's CSPRNG.
vi.mock('node:crypto', async (original) => {
  const real = await original<typeof import('node:crypto')>();
  return { ...real, randomBytes: vi.fn(real.randomBytes) };
});

const figures = new Figures('security', 0);
const TOKEN = 'security-token-0123456789abcdef';
const lines: string[] = [];
let h: RelayHarness;
let deps: CheckDeps;

const apply = (name: string, provider = 'proc'): ApplyRequest => ({
  apiVersion: 'egress.dev/v1',
  kind: 'Proxy',
  action: 'apply',
  metadata: { name, labels: {} },
  spec: { provider, placement: {}, port: 0 },
});

/** Checks `name` until `done` holds (the sweep's and kicks' job). */
async function settle(name: string, done: () => Promise<boolean>, ms = 20_000): Promise<void> {
  await eventually(
    async () => {
      if (await done()) return;
      await runCheck(deps, { names: [name] });
      figures.add('checks');
      throw new Error(`${name} did not settle within ${ms} ms`);
    },
    ms,
    200,
  );
}

/** Every document but `credentials/` (proxies with events, relays with inventory and commands, rejections, providers). */
async function everythingStoredButCredentials(): Promise<string> {
  const parts: unknown[] = [];
  for (const name of ['proxies', 'relays', 'rejections', 'providers']) {
    for (const ref of await h.db.collection(name).listDocuments()) {
      parts.push((await ref.get()).data());
      for (const sub of await ref.listCollections())
        for (const d of (await sub.get()).docs) parts.push({ [`${ref.path}/${sub.id}/${d.id}`]: d.data() });
    }
  }
  return JSON.stringify(parts);
}

beforeAll(async () => {
  h = await startRelayHarness(
    'security',
    proxyPorts(25600, 4),
    { apiTokens: [TOKEN] },
    { onLog: (line) => lines.push(line) },
  );
  deps = {
    config: h.config,
    proxies: h.proxies,
    registry: h.registry,
    logger: h.logger,
    bus: h.bus,
    rolloutCounts: (p) => h.proxies.rolloutCounts(p),
  };
}, 60_000);

afterAll(async () => {
  figures.report();
  await h?.close();
}, 60_000);

describe('guarantee: per-proxy credentials are secret', () => {
  it('come from crypto.randomBytes: the password is the random bytes, and 5 000 of them look random', () => {
    const randomBytes = vi.mocked(crypto.randomBytes);
    const before = randomBytes.mock.results.length;
    const { password } = generateCredentials('p');
    const drawn = randomBytes.mock.results[before]?.value as Buffer;
    expect(randomBytes.mock.results.length).toBe(before + 1);
    expect(password).toBe(drawn.toString('base64url'));
    // Statistical sanity: distinct, and the bits of the decoded bytes balanced and uniform per symbol.
    const passwords = Array.from({ length: 5000 }, (_, i) => generateCredentials(`p${i}`).password);
    expect(new Set(passwords).size).toBe(5000);
    expect(new Set(passwords.map((p) => p.length))).toEqual(new Set([24]));
    const counts = new Map<string, number>();
    for (const p of passwords) for (const ch of p) counts.set(ch, (counts.get(ch) ?? 0) + 1);
    const expected = (5000 * 24) / 64;
    const chiSquare = [...counts.values()].reduce((sum, n) => sum + (n - expected) ** 2 / expected, 0);
    expect(counts.size).toBe(64);
    // 63 degrees of freedom: 130 is exceeded by chance about once in a million runs.
    expect(chiSquare).toBeLessThan(130);
    const bits = passwords.reduce((sum, p) => {
      let ones = 0;
      for (const byte of Buffer.from(p, 'base64url')) ones += byte.toString(2).split('1').length - 1;
      return sum + ones;
    }, 0);
    expect(Math.abs(bits / (5000 * 18 * 8) - 0.5)).toBeLessThan(0.01);
    figures.add('passwordsGenerated', 5001);
    figures.max('chiSquareX100', Math.round(chiSquare * 100));
  });

  it('never appear in documents, events, inventory, logs, process arguments or log files, over a full create/check/delete', async () => {
    await h.proxies.apply(apply('sec-1'), Date.now(), Date.now());
    await settle('sec-1', async () => (await h.proxies.get('sec-1'))?.doc.status.phase === 'Ready');
    const creds = await h.proxies.credentials('sec-1');
    expect(creds?.password.length).toBeGreaterThanOrEqual(20);
    const password = creds?.password ?? 'unset';
    // Stored apart: credentials/{name} holds them, nothing else does.
    expect((await h.db.collection('credentials').doc('sec-1').get()).get('password')).toBe(password);
    const stored = await everythingStoredButCredentials();
    expect(stored).toContain('sec-1');
    expect(stored).not.toContain(password);
    // The proxy process got them from its 0600 state file, not its arguments.
    const pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p));
    const argvs = pids.map((pid) => {
      try {
        return readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      } catch {
        return '';
      }
    });
    expect((await proxyProcesses(h.stateDir)).get(instanceName('it', 'sec-1'))).toBe(1);
    expect(argvs.filter((a) => a.includes(password))).toEqual([]);
    // The proxy's own log file (removed with the instance).
    const logDir = join(h.stateDir, 'logs');
    const files = readdirSync(logDir).map((f) => readFileSync(join(logDir, f), 'utf8'));
    await h.proxies.requestDelete('sec-1', Date.now(), Date.now());
    await settle('sec-1', async () => (await h.proxies.get('sec-1')) === undefined);
    expect((await h.db.collection('credentials').doc('sec-1').get()).exists).toBe(false);
    // Logs of the functions' side and the relay (DEBUG level), create to delete.
    figures.add('logLinesScanned', lines.length);
    figures.add('logFilesScanned', files.length);
    expect(lines.length).toBeGreaterThan(10);
    expect(lines.filter((l) => l.includes(password))).toEqual([]);
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((f) => f.includes(password))).toEqual([]);
    figures.add('passwordInLogs', 0);
  }, 60_000);
});

describe('guarantee: the API gives credentials only to the right token', () => {
  it('discovery with no token, a wrong token, a token of another length: 401 and no password; the right token: the URL', async () => {
    await h.proxies.apply(apply('sec-2'), Date.now(), Date.now());
    await settle('sec-2', async () => (await h.proxies.get('sec-2'))?.doc.status.phase === 'Ready');
    const password = (await h.proxies.credentials('sec-2'))?.password ?? 'unset';
    const api = {
      ...deps,
      relays: h.relays,
      reports: new FirestoreReportRepository(h.db, h.logger),
      providerStatus: new FirestoreProviderStatusRepository(h.db),
    };
    const call = (path: string, authorization?: string) =>
      handleApi(api, {
        method: 'GET',
        path,
        query: new URLSearchParams(),
        headers: authorization ? { authorization } : {},
        body: undefined,
      });
    for (const path of ['/v1/discovery', '/v1/proxies', '/v1/proxies/sec-2']) {
      for (const authorization of [
        undefined,
        `Bearer ${TOKEN.replace('0', '1')}`,
        'Bearer short',
        `Bearer ${TOKEN}0`,
      ]) {
        const answer = await call(path, authorization);
        figures.add('unauthorisedCalls');
        expect(answer.status, `${path} ${authorization}`).toBe(401);
        expect(JSON.stringify(answer.body)).not.toContain(password);
      }
    }
    const discovery = await call('/v1/discovery', `Bearer ${TOKEN}`);
    expect(JSON.stringify(discovery.body)).toContain(`:${password}@`);
    // Status and listings never carry it, even for the right token.
    for (const path of ['/v1/proxies', '/v1/proxies/sec-2'])
      expect(JSON.stringify((await call(path, `Bearer ${TOKEN}`)).body)).not.toContain(password);
  }, 60_000);

  it('tokens are compared as SHA-256 digests with timingSafeEqual: any length, never a throw', () => {
    const source = readFileSync('shared/api/http.ts', 'utf8');
    expect(source).toMatch(/timingSafeEqual\(mine, digest\(t\.token\)\)/);
    expect(source).toMatch(/createHash\('sha256'\)/);
    const admin = (token: string) => ({ scope: 'admin' as const, token });
    const others = [admin(TOKEN), { scope: 'discover' as const, token: 'another-token-of-another-length' }];
    for (const presented of ['', 'a', TOKEN.slice(1), `${TOKEN}x`, 'x'.repeat(100_000), '\u00ff'.repeat(33)])
      expect(tokenScope(`Bearer ${presented}`, others)).toBeUndefined();
    expect(tokenScope(`Bearer ${TOKEN}`, [admin('x'.repeat(17)), admin(TOKEN)])).toBe('admin');
    expect(tokenScope('Bearer another-token-of-another-length', others)).toBe('discover');
    expect(tokenScope(['Bearer nope', `Bearer ${TOKEN}`], [admin(TOKEN)])).toBeUndefined();
    expect(tokenScope(`Bearer ${TOKEN}`, [])).toBeUndefined();
  });
});

describe('guarantee: GC only ever touches its own installation', () => {
  it('Kubernetes and a relay: another installation’s orphans survive our GC, ours beside them go', async () => {
    const later = () => Date.now() + 3_600_000;
    // Kubernetes: one namespace, two installations. (Compute Engine: test/providers/gcp-reconcile.test.ts.)
    const kube = await startKubeHarness('sec-kube', { installationId: 'ours' });
    try {
      await kube.provider.create(orphanSpec('theirs', 'their-pod'));
      await kube.provider.create(orphanSpec('ours', 'our-pod'));
      figures.add('foreignInstancesSeeded');
      const kubeReport = await collectGarbage({ ...kube.deps, now: later });
      expect(kubeReport[0]?.deleted).toEqual([instanceName('ours', 'our-pod')]);
      expect(kube.fake.pod('default', instanceName('theirs', 'their-pod'))?.metadata.deletionTimestamp).toBeUndefined();
    } finally {
      await kube.close();
    }
    // A relay's inventory with an orphan of each installation (as a relay of a second one would report).
    const item = (installation: string, proxy: string) => ({
      name: instanceName(installation, proxy),
      proxy,
      installationId: installation,
      provider: 'proc',
      specHash: 'orphan0',
      state: 'Running' as const,
      ip: '127.0.0.1',
      port: 1,
      createdAt: 1,
    });
    await h.relays.applyReport(
      {
        relay: 'security',
        bootId: 'seeded',
        seq: 1,
        sentAt: Date.now(),
        startedAt: Date.now() + 1,
        providers: [{ name: 'proc', type: 'process', ok: true, message: 'ok' }],
        instances: [item('theirs', 'relay-orphan'), item('it', 'relay-orphan')],
        results: [],
      },
      Date.now(),
    );
    figures.add('foreignInstancesSeeded');
    const relayReport = await collectGarbage({ ...deps, now: later });
    expect(relayReport[0]?.skipped).toBeUndefined();
    expect(relayReport[0]?.deleted).toEqual([instanceName('it', 'relay-orphan')]);
    expect(await h.relays.instance('security', instanceName('theirs', 'relay-orphan'))).toBeDefined();
    figures.add('foreignInstancesDeleted', 0);
  }, 60_000);
});
