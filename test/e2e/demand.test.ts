/**
 * tiers:, static provider: and pool cost: on the stack `npm start` runs, with curl through
 * `egress gateway` (username key `pool-<name>`). The config adds a `static` provider `own` whose
 * endpoints are two real tinyproxies (servers of your own, $0.01 an hour each); the pool fills
 * them first (tier 0, maxReplicas 2) and overflows to the relay's `local` (tier 1).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { z } from 'zod';
import { LOCAL_DEFAULT_CONFIG } from '../../shared/config/local-default.js';
import { poolMemberSchema } from '../../shared/api/schema.js';
import { COLLECTIONS } from '../../shared/store/firestore/client.js';
import { eventually } from '../support/eventually.js';
import { startVendor, type Vendor } from '../support/static-vendor.js';
import { curl, requestsPerProxy, startCliGateway, type CliGateway } from './gateway/clients.js';
import { cliOf, startLocalStack, type RunningStack } from './stack.js';

const OFFSET = 1300;
const ECHO = `http://127.0.0.1:${8088 + OFFSET}/`;
const POOL = 'tiered';
let stack: RunningStack;
let vendor: Vendor;
let gateway: CliGateway;
let dir: string;
/** Requests curl sent through the gateway for the pool (all answered). */
let sent = 0;

const egress = cliOf(() => stack);
const env = () => stack.localEnv();

async function api(path: string, token = env()['EGRESS_TOKEN']): Promise<Response> {
  return fetch(`${env()['EGRESS_API_URL']}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

/** The pool's live members (not draining), each with its provider. */
async function members() {
  const body = z.object({ members: z.array(poolMemberSchema) }).parse(await (await api(`/v1/pools/${POOL}`)).json());
  return body.members.filter((m) => !m.draining);
}

/** `n` curls through the gateway as `<user>-pool-tiered`: each must be answered by the echo. */
async function curlPool(n: number): Promise<void> {
  const url = gateway.url.replace(/^http:\/\/([^:]+):/, (_m, user: string) => `http://${user}-pool-${POOL}:`);
  for (let i = 0; i < n; i++) {
    const answer = await curl(url, ECHO);
    expect(answer.status).toBe(200);
    expect(answer.body).toMatch(/"ip"/);
    sent += 1;
  }
}

/** Answered requests per member since `before` (the gateway's metrics), only members that got some. */
async function servedSince(before: Map<string, number>): Promise<Map<string, number>> {
  const now = await requestsPerProxy(gateway.metricsUrl);
  return new Map([...now].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const).filter(([, v]) => v > 0));
}

async function scale(replicas: number): Promise<void> {
  const r = await egress('scale', 'pool', POOL, '--replicas', String(replicas), '--wait', '--timeout', '60s');
  expect(r.code, r.stderr).toBe(0);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'egress-e2e-demand-'));
  vendor = await startVendor(2);
  const own = {
    name: 'own',
    type: 'static',
    options: {
      releaseCooldownSeconds: 0,
      endpoints: vendor.endpoints.map(({ host, port, username, password }) => ({
        host,
        port,
        username,
        password,
        hourlyUsd: 0.01,
      })),
    },
  };
  const configFile = join(dir, 'egress.yaml');
  // Usage folded every 2 s, not every minute: the cost figures show within the test.
  const config = { ...LOCAL_DEFAULT_CONFIG, usageIntervalSeconds: 2 };
  writeFileSync(configFile, stringify({ ...config, providers: [...LOCAL_DEFAULT_CONFIG.providers, own] }));
  stack = await startLocalStack({
    EGRESS_PORT_OFFSET: String(OFFSET),
    EGRESS_SAMPLES: 'none',
    EGRESS_CONFIG: configFile,
  });
  // A pool applied while a provider is not yet Healthy counts that as its entry's first failure.
  const providers = z.object({ items: z.array(z.object({ name: z.string(), status: z.string() })) });
  await eventually(
    async () => {
      const items = providers.parse(await (await api('/v1/providers')).json()).items;
      expect(items.filter((p) => p.status === 'Healthy').map((p) => p.name)).toEqual(
        expect.arrayContaining(['local', 'own']),
      );
    },
    60_000,
    500,
  );
  const poolFile = join(dir, 'pool.yaml');
  writeFileSync(
    poolFile,
    stringify({
      apiVersion: 'egress.dev/v1',
      kind: 'ProxyPool',
      metadata: { name: POOL },
      spec: {
        replicas: 2,
        template: { spec: { provider: 'own' } },
        spread: [
          { provider: 'own', tier: 0, maxReplicas: 2 },
          { provider: 'local', tier: 1 },
        ],
      },
    }),
  );
  const applied = await egress('apply', '-f', poolFile, '--wait', '--timeout', '60s');
  if (applied.code !== 0) throw new Error(`apply --wait failed: ${applied.stdout}${applied.stderr}`);
  gateway = await startCliGateway(stack.home, ['--listen', '127.0.0.1:0', '--metrics', '127.0.0.1:0']);
});

afterAll(async () => {
  await gateway?.stop();
  if (stack && stack.process.exitCode === null) await stack.interrupt();
  await vendor?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('static provider: endpoints of the config as instances', () => {
  it('each member claims a free endpoint, the probe makes it Ready, and discovery hands it out', async () => {
    const live = await members();
    expect(live.map((m) => [m.provider, m.phase])).toEqual([
      ['own', 'Ready'],
      ['own', 'Ready'],
    ]);
    // One claim per member, on the two tinyproxies' ports.
    const claims = await stack.db.collection(COLLECTIONS.staticClaims).where('provider', '==', 'own').get();
    const held = claims.docs.filter((d) => d.get('proxy') !== undefined);
    expect(held.map((d) => String(d.get('proxy'))).sort()).toEqual(live.map((m) => m.name).sort());
    expect(held.map((d) => Number(d.get('port'))).sort()).toEqual(vendor.endpoints.map((e) => e.port).sort());
    // The probe went through the endpoint to the echo: the egress IP it saw.
    expect(live.map((m) => m.egressIp)).toEqual(['127.0.0.1', '127.0.0.1']);
    // Discovery (the gateway's token) gives each as a usable URL with the endpoint's credentials.
    // Discovery answers from a page read up to 2 s before (shared/api/discovery-cache.ts): look again.
    const urls = await eventually(
      async () => {
        const listed = await api('/v1/discovery?provider=own&format=urls', env()['EGRESS_DISCOVER_TOKEN']);
        expect(listed.status).toBe(200);
        const found = (await listed.text()).split('\n').filter(Boolean);
        expect(found.map((u) => Number(new URL(u).port)).sort()).toEqual(vendor.endpoints.map((e) => e.port).sort());
        return found;
      },
      10_000,
      500,
    );
    const direct = await curl(urls[0] ?? '', ECHO);
    expect(direct.status).toBe(200);
    expect(direct.body).toMatch(/"ip":\s*"127\.0\.0\.1"/);
  });
});

describe('tiers: tier 0 first, overflow to tier 1, and back', () => {
  it('while tier 0 holds the replicas, curl through the gateway reaches only its members', async () => {
    const own = (await members()).map((m) => m.name).sort();
    const before = await requestsPerProxy(gateway.metricsUrl);
    await curlPool(4);
    expect([...(await servedSince(before)).keys()].sort()).toEqual(own);
  });

  it("replicas past tier 0's cap overflow to tier 1, and the gateway reaches that member too", async () => {
    await scale(3);
    const live = await members();
    expect(live.map((m) => m.provider).sort()).toEqual(['local', 'own', 'own']);
    const overflow = live.find((m) => m.provider === 'local')?.name ?? '';
    // The pool's status is written by its next reconcile after the member turned Ready: look again.
    await eventually(
      async () => {
        const described = await egress('describe', 'pool', POOL);
        expect(described.stdout).toContain('[0] own (at most 2): 2 Ready of 2 live, share 2 (available)');
        expect(described.stdout).toContain('[1] local (tier 1): 1 Ready of 1 live, share 1 (available)');
      },
      15_000,
      500,
    );
    // The gateway learns the member at its next refresh (2 s): curl until it served a request.
    const before = await requestsPerProxy(gateway.metricsUrl);
    await eventually(
      async () => {
        await curlPool(3);
        expect((await servedSince(before)).get(overflow)).toBeGreaterThan(0);
      },
      20_000,
      500,
    );
  });

  it('scaled back down, the tier-1 member drains first and the requests go to tier 0 again', async () => {
    const own = (await members()).filter((m) => m.provider === 'own').map((m) => m.name);
    await scale(2);
    expect((await members()).map((m) => m.name).sort()).toEqual(own.sort());
    // Once the gateway's list no longer holds the drained member (its refresh every 2 s, discovery's
    // page up to 2 s old), only tier 0 serves.
    await eventually(
      async () => {
        const before = await requestsPerProxy(gateway.metricsUrl);
        await curlPool(4);
        expect([...(await servedSince(before)).keys()].sort()).toEqual(own.sort());
      },
      20_000,
      1000,
    );
  });
});

describe('pool cost: usage through the gateway, priced', () => {
  it('get pools -o wide and describe pool show what the requests cost', async () => {
    // The gateway reports every 5 s; the pool folds its counts every 2 s (usageIntervalSeconds).
    const usage = await eventually(
      async () => {
        const described = await egress('describe', 'pool', POOL);
        const line = /Usage \(24 h\):\s+(\d+) requests, (\d+) answered/.exec(described.stdout);
        expect(Number(line?.[1])).toBeGreaterThanOrEqual(sent);
        return described.stdout;
      },
      30_000,
      1000,
    );
    expect(Number(/(\d+) answered/.exec(usage)?.[1])).toBeGreaterThanOrEqual(sent);
    // Two static endpoints at $0.01 an hour, plus the control plane's share.
    expect(usage).toMatch(/Cost:\s+\$0\.0\d{3} an hour/);
    expect(usage).toMatch(/per GiB: \$\d+\.\d+, per 1,000 answered: \$\d+\.\d+/);
    const wide = await egress('get', 'pools', '-o', 'wide');
    expect(wide.code).toBe(0);
    const [header, row] = wide.stdout.split('\n');
    expect(header).toMatch(/COST\/H\s+COST\/GIB\s+COST\/1K-OK$/);
    expect(row).toMatch(new RegExp(`^${POOL}\\s.*\\$0\\.0\\d{3}\\s+\\$\\d+\\.\\d+\\s+\\$\\d+\\.\\d+$`));
  });
});
