/**
 * A pool on the stack `npm start` runs, driven as a user would: the built `egress` CLI for every
 * change, the HTTP API (`GET /v1/pools/{name}`) to watch it every 250 ms, curl through members to
 * see their egress addresses. Six members over `local` and `local-b` come up 3 + 3, scale to 2 and
 * back, move to `local` while `local-b` is really broken (its state directory replaced by a file:
 * its health check fails, the health function's verdict turns Unhealthy) and come back once it is
 * repaired, roll a template change with `minAvailable` held, and a banned member is replaced by one
 * leaving from another address.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { cliOf, startLocalStack, type RunningStack } from './stack.js';

const run = promisify(execFile);
const OFFSET = 900;
const ECHO = `http://127.0.0.1:${8088 + OFFSET}/`;
let stack: RunningStack;
let dir: string;

const memberSchema = z.object({
  name: z.string(),
  provider: z.string(),
  phase: z.string(),
  address: z.string().nullable(),
  egressIp: z.string().nullable(),
  draining: z.boolean(),
});
const poolSchema = z.object({
  spec: z.object({ replicas: z.number() }),
  status: z.object({ replicas: z.number(), readyReplicas: z.number() }),
  members: z.array(memberSchema),
});
type Member = z.infer<typeof memberSchema>;

const egress = cliOf(() => stack);

/** `GET <path>` on the stack's API, as the CLI would call it; the body must be 200 JSON. */
async function get(path: string): Promise<unknown> {
  const env = stack.localEnv();
  const response = await fetch(`${env['EGRESS_API_URL']}${path}`, {
    headers: { authorization: `Bearer ${env['EGRESS_TOKEN']}` },
  });
  expect(response.status).toBe(200);
  return response.json();
}

/** The pool as `GET /v1/pools/crawl` shows it. */
const pool = async () => poolSchema.parse(await get('/v1/pools/crawl'));

const serving = (members: Member[]) => members.filter((m) => m.phase === 'Ready' && !m.draining);
const byProvider = (members: Member[]) =>
  Object.fromEntries(['local', 'local-b'].map((p) => [p, members.filter((m) => m.provider === p).length]));

/** Polls `done` every 500 ms until it holds (at most `ms`); the failure says what it waited for. */
async function waitFor(what: string, done: () => Promise<boolean>, ms = 60_000) {
  for (const deadline = Date.now() + ms; Date.now() < deadline;) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`not ${what} within ${ms} ms`);
}

/** Polls the pool until `done` holds (at most `ms`), then returns it; the failure says what it waited for. */
async function until(what: string, done: (p: Awaited<ReturnType<typeof pool>>) => boolean, ms = 120_000) {
  let last: Awaited<ReturnType<typeof pool>> | undefined;
  for (const deadline = Date.now() + ms; Date.now() < deadline;) {
    last = await pool();
    if (done(last)) return last;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`pool crawl: not ${what} within ${ms} ms; last seen ${JSON.stringify(last?.members)}`);
}

/** A provider's status as the health function last recorded it (`GET /v1/providers`). */
async function providerStatus(name: string): Promise<string | undefined> {
  const body = z.object({ items: z.array(z.object({ name: z.string(), status: z.string() })) });
  return body.parse(await get('/v1/providers')).items.find((p) => p.name === name)?.status;
}

/** Samples the pool every 250 ms: when each member was first seen, the fewest serving, the most members. */
function watchPool() {
  const firstSeen = new Map<string, { at: number; provider: string }>();
  let minServing = Infinity;
  let maxMembers = 0;
  let count = 0;
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = Date.now();
      const p = await pool();
      count++;
      for (const m of p.members)
        if (!firstSeen.has(m.name)) firstSeen.set(m.name, { at: started, provider: m.provider });
      minServing = Math.min(minServing, serving(p.members).length);
      maxMembers = Math.max(maxMembers, p.members.length);
      await new Promise((r) => setTimeout(r, Math.max(0, 250 - (Date.now() - started))));
    }
  })();
  return {
    firstSeen,
    stop: async () => {
      running = false;
      await loop;
      return { minServing, maxMembers, count };
    },
  };
}

/** The egress address the echo endpoint sees through one member (its discovery URL carries the credentials). */
async function egressThrough(member: string): Promise<string> {
  const { stdout } = await egress('discover', '-o', 'json', '--pool', 'crawl');
  const found = z
    .array(z.object({ name: z.string(), url: z.string() }))
    .parse(JSON.parse(stdout))
    .find((e) => e.name === member);
  if (!found) throw new Error(`${member} is not in discovery`);
  const echoed = await run('curl', ['-sS', '--max-time', '5', '-x', found.url, ECHO]);
  return (JSON.parse(echoed.stdout) as { ip: string }).ip;
}

/** Writes the pool file with `maxAge` as the template's (a change of it rolls every member). */
function poolFile(maxAge: string): string {
  const file = join(dir, `pool-${maxAge}.yaml`);
  writeFileSync(
    file,
    [
      'apiVersion: egress.dev/v1',
      'kind: ProxyPool',
      'metadata: {name: crawl}',
      'spec:',
      '  replicas: 6',
      '  minAvailable: 5',
      '  maxSurge: 1',
      `  template: {spec: {provider: local, maxAge: ${maxAge}}}`,
      '  spread: [{provider: local}, {provider: local-b}]',
      '',
    ].join('\n'),
  );
  return file;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'egress-e2e-pools-'));
  stack = await startLocalStack({ EGRESS_PORT_OFFSET: String(OFFSET), EGRESS_SAMPLES: 'none' });
  // Until the relay's first report both providers are Unhealthy ("has never reported"); a pool
  // applied then counts that as each entry's first failure, and the failover test's fault would be
  // a relapse with a doubled recovery delay. A user's pool would too; this test is about one fault.
  for (const provider of ['local', 'local-b'])
    await waitFor(`${provider} to be Healthy`, async () => (await providerStatus(provider)) === 'Healthy');
});

afterAll(async () => {
  if (stack && stack.process.exitCode === null) await stack.interrupt();
});

describe('e2e: a pool on the local stack', () => {
  it('apply --wait brings up 6 members, 3 on local and 3 on local-b, each leaving from its own address', async () => {
    const r = await egress('apply', '-f', poolFile('24h'), '--wait', '--timeout', '150s');
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const p = await until('6 Ready', (x) => serving(x.members).length === 6);
    expect(byProvider(p.members)).toEqual({ local: 3, 'local-b': 3 });
    const addresses = await Promise.all(p.members.map((m) => egressThrough(m.name)));
    expect(new Set(addresses).size).toBe(6);
    for (const [i, m] of p.members.entries())
      expect(addresses[i]).toMatch(m.provider === 'local' ? /^17\.0\.\d+\.\d+$/ : /^5\.9\.\d+\.\d+$/);
  }, 180_000);

  it('scale pool --replicas 2 --wait leaves 1 + 1; scaling back to 6 gives 3 + 3 again', async () => {
    const down = await egress('scale', 'pool', 'crawl', '--replicas', '2', '--wait', '--timeout', '120s');
    expect(down.code, down.stderr).toBe(0);
    const two = await until('2 members', (x) => x.members.length === 2 && serving(x.members).length === 2);
    expect(byProvider(two.members)).toEqual({ local: 1, 'local-b': 1 });
    const up = await egress('scale', 'pool', 'crawl', '--replicas', '6', '--wait', '--timeout', '150s');
    expect(up.code, up.stderr).toBe(0);
    const six = await until('6 Ready', (x) => x.members.length === 6 && serving(x.members).length === 6);
    expect(byProvider(six.members)).toEqual({ local: 3, 'local-b': 3 });
  }, 300_000);

  it('local-b made unhealthy: its share moves to local and back, never below minAvailable, without churn', async () => {
    const before = await until('3 + 3 serving', (x) => serving(x.members).length === 6 && x.members.length === 6);
    const stayed = before.members.filter((m) => m.provider === 'local').map((m) => m.name);
    // A real fault: local-b's state directory becomes a file, so its check fails (ENOTDIR) and the
    // relay reports it not ok; `local`, with its own directory, is untouched.
    const state = join(stack.home, 'relay-state', 'local-b');
    const watch = watchPool();
    let watched = { minServing: 0, maxMembers: 0, count: 0 };
    let restoredAt = 0;
    const t0 = Date.now();
    const phases: string[] = [];
    const mark = (what: string) => phases.push(`${what} +${((Date.now() - t0) / 1000).toFixed(1)} s`);
    try {
      renameSync(state, `${state}.away`);
      writeFileSync(state, 'fault injected by test/e2e/pools.test.ts\n');
      await waitFor(
        'the health verdict on local-b to be Unhealthy',
        async () => (await providerStatus('local-b')) === 'Unhealthy',
      );
      mark('local-b Unhealthy');
      expect(await providerStatus('local')).toBe('Healthy');
      const moved = await until(
        '6 serving on local, none on local-b',
        (x) => serving(x.members).length === 6 && byProvider(serving(x.members))['local'] === 6,
        150_000,
      );
      mark('6 on local');
      // Its drained members wait for local-b to answer again before they are deleted.
      expect(moved.members.filter((m) => m.provider === 'local-b').every((m) => m.draining)).toBe(true);
      rmSync(state);
      renameSync(`${state}.away`, state);
      restoredAt = Date.now();
      await waitFor(
        'the health verdict on local-b to be Healthy',
        async () => (await providerStatus('local-b')) === 'Healthy',
      );
      mark('local-b Healthy');
      const back = await until(
        '3 + 3 again, none draining',
        (x) => x.members.length === 6 && serving(x.members).length === 6 && byProvider(x.members)['local-b'] === 3,
        240_000,
      );
      mark('3 + 3 again');
      const entries = z
        .object({ status: z.object({ entries: z.array(z.record(z.string(), z.unknown())) }) })
        .parse(await get('/v1/pools/crawl')).status.entries;
      console.log(`pool failover entries: ${JSON.stringify(entries)}`);
      // Exactly the members that moved moved back (the newest on local): the original three stayed.
      const onLocalNow = back.members.filter((m) => m.provider === 'local').map((m) => m.name);
      expect(onLocalNow.sort()).toEqual(stayed.sort());
    } finally {
      if (restoredAt === 0 && existsSync(`${state}.away`)) {
        rmSync(state, { force: true });
        renameSync(`${state}.away`, state);
      }
      watched = await watch.stop();
    }
    const { minServing, count } = watched;
    const created = [...watch.firstSeen].filter(([name]) => !before.members.some((m) => m.name === name));
    const onLocal = created.filter(([, m]) => m.provider === 'local');
    const onB = created.filter(([, m]) => m.provider === 'local-b');
    for (const [name, m] of onB) phases.push(`${name} first seen +${((m.at - t0) / 1000).toFixed(1)} s`);
    console.log(
      `pool failover: ${count} samples, min serving ${minServing}, created ${onLocal.length} on local, ${onB.length} on local-b; ${phases.join(', ')}`,
    );
    // No churn: three members moved out and three back, one create each.
    expect(onLocal).toHaveLength(3);
    expect(onB).toHaveLength(3);
    // Hysteresis: local-b got members back only after staying healthy for poolRecoverSeconds (20 s
    // in the local config; less the sweep interval, 5 s, by which the last "still down" look may
    // precede the repair).
    for (const [, m] of onB) expect(m.at - restoredAt).toBeGreaterThanOrEqual(15_000);
    expect(minServing).toBeGreaterThanOrEqual(5);
  }, 480_000);

  it('a template change rolls every member; sampled every 250 ms, never fewer than minAvailable (5) serve', async () => {
    const before = new Set((await pool()).members.map((m) => m.name));
    const samples: { serving: number; members: number }[] = [];
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        const started = Date.now();
        const p = await pool();
        samples.push({ serving: serving(p.members).length, members: p.members.length });
        await new Promise((r) => setTimeout(r, Math.max(0, 250 - (Date.now() - started))));
      }
    })();
    try {
      expect((await egress('apply', '-f', poolFile('23h'))).code).toBe(0);
      const rolled = await until(
        'rolled',
        (x) => x.members.length === 6 && serving(x.members).length === 6 && x.members.every((m) => !before.has(m.name)),
        240_000,
      );
      expect(byProvider(rolled.members)).toEqual({ local: 3, 'local-b': 3 });
    } finally {
      sampling = false;
      await sampler;
    }
    const minServing = Math.min(...samples.map((s) => s.serving));
    const maxMembers = Math.max(...samples.map((s) => s.members));
    console.log(`pool rotation: ${samples.length} samples, min serving ${minServing}, max members ${maxMembers}`);
    // The sampler starts before the apply and stops once the roll is seen: it covers the whole roll
    // by construction. An idle machine rolls 6 members in under 5 s (19 samples in one CI run), so
    // the count only guards against a sampler that did not run.
    expect(samples.length).toBeGreaterThanOrEqual(5);
    expect(Math.min(...samples.map((s) => s.serving))).toBeGreaterThanOrEqual(5);
    // maxSurge 1: at most 7 members, drained ones not yet deleted included.
    expect(maxMembers).toBeLessThanOrEqual(7);
  }, 300_000);

  it('a member reported banned is replaced by a new member leaving from another address', async () => {
    const p = await pool();
    const banned = serving(p.members).find((m) => m.provider === 'local-b');
    if (!banned) throw new Error('no serving member on local-b');
    const address = await egressThrough(banned.name);
    const r = await egress('report', 'proxy', banned.name, '--reason', 'banned', '--detail', 'e2e pools');
    expect(r.code, r.stderr).toBe(0);
    const after = await until(
      `without ${banned.name}`,
      (x) =>
        x.members.length === 6 && serving(x.members).length === 6 && !x.members.some((m) => m.name === banned.name),
    );
    expect(byProvider(after.members)).toEqual({ local: 3, 'local-b': 3 });
    const fresh = after.members.filter((m) => !p.members.some((old) => old.name === m.name));
    expect(fresh).toHaveLength(1);
    const next = await egressThrough(fresh[0]?.name ?? '');
    expect(next).toMatch(/^5\.9\.\d+\.\d+$/);
    expect(next).not.toBe(address);
  }, 180_000);

  it('delete pool --wait removes the pool and every member', async () => {
    const r = await egress('delete', 'pool', 'crawl', '--wait', '--timeout', '120s');
    expect(r.code, r.stderr).toBe(0);
    expect((await egress('get', 'pool', 'crawl')).code).toBe(1);
    const { stdout } = await egress('get', 'proxies', '-o', 'json');
    expect(z.object({ items: z.array(z.unknown()) }).parse(JSON.parse(stdout)).items).toEqual([]);
  }, 150_000);
});
