/**
 * wake: an autoscaled pool at zero members on the stack `npm start` runs, woken by the first
 * request through `egress gateway` (username key `pool-<name>`): curl's request is held while the
 * gateway reports it waiting, the pool creates a member, and the request is served through that
 * first Ready member. A request for a pool whose only entry cannot place a member is answered 503
 * with Retry-After once `--wake-timeout` has passed.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { clientEnv, startCliGateway, type CliGateway } from './gateway/clients.js';
import { cliOf, startLocalStack, type RunningStack } from './stack.js';

const run = promisify(execFile);
const OFFSET = 1100;
const ECHO = `http://127.0.0.1:${8088 + OFFSET}/`;
/** The gateway's hold bound for the pool that cannot wake. */
const SHORT_WAKE_SECONDS = 4;
let stack: RunningStack;
let dir: string;
let gateway: CliGateway;
let impatient: CliGateway;

const egress = cliOf(() => stack);

const poolSchema = z.object({
  status: z.object({ desiredReplicas: z.number().optional(), readyReplicas: z.number() }),
  members: z.array(z.object({ name: z.string(), phase: z.string(), draining: z.boolean() })),
});

/** `GET /v1/pools/{name}` with the stack's admin token. */
async function pool(name: string) {
  const env = stack.localEnv();
  const res = await fetch(`${env['EGRESS_API_URL']}/v1/pools/${name}`, {
    headers: { authorization: `Bearer ${env['EGRESS_TOKEN']}` },
  });
  expect(res.status).toBe(200);
  return poolSchema.parse(await res.json());
}

/** `local`'s status as the health function last recorded it (`GET /v1/providers`). */
async function localStatus(): Promise<string | undefined> {
  const env = stack.localEnv();
  const res = await fetch(`${env['EGRESS_API_URL']}/v1/providers`, {
    headers: { authorization: `Bearer ${env['EGRESS_TOKEN']}` },
  });
  const body = z.object({ items: z.array(z.object({ name: z.string(), status: z.string() })) });
  return body.parse(await res.json()).items.find((p) => p.name === 'local')?.status;
}

/** Applies an autoscaled pool (0 to 1 members) on `local`, at `bindAddress` when given. */
async function applyPool(name: string, bindAddress?: string) {
  const placement = bindAddress ? `, placement: {bindAddress: '${bindAddress}'}` : '';
  const file = join(dir, `${name}.yaml`);
  writeFileSync(
    file,
    [
      'apiVersion: egress.dev/v1',
      'kind: ProxyPool',
      `metadata: {name: ${name}}`,
      'spec:',
      '  autoscale: {minReplicas: 0, maxReplicas: 1, target: {inFlightPerMember: 1}, scaleToZeroAfter: 10m}',
      `  template: {spec: {provider: local${placement}}}`,
      '',
    ].join('\n'),
  );
  const applied = await egress('apply', '-f', file);
  expect(applied.stderr).toBe('');
  expect(applied.code).toBe(0);
}

/** curl through the gateway as `<user>-pool-<name>`: status, headers, body and how long it took. */
async function curlPool(gw: CliGateway, name: string, maxSeconds: number) {
  const url = gw.url.replace(/^http:\/\/([^:]+):/, (_m, user: string) => `http://${user}-pool-${name}:`);
  const started = Date.now();
  const { stdout } = await run(
    'curl',
    ['-sS', '-i', '--max-time', String(maxSeconds), '-w', '\n%{http_code}', '-x', url, ECHO],
    { env: clientEnv() },
  );
  const at = stdout.lastIndexOf('\n');
  return { status: Number(stdout.slice(at + 1)), response: stdout.slice(0, at), started, ms: Date.now() - started };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'egress-e2e-wake-'));
  stack = await startLocalStack({ EGRESS_PORT_OFFSET: String(OFFSET), EGRESS_SAMPLES: 'none' });
  // Until the relay's first report `local` is Unhealthy; a pool applied then would count it as its
  // entry's first failure and wait out the recovery delay, which is not what this test measures.
  for (const deadline = Date.now() + 60_000; (await localStatus()) !== 'Healthy';) {
    if (Date.now() > deadline) throw new Error('local not Healthy within 60 s');
    await new Promise((r) => setTimeout(r, 500));
  }
  await applyPool('sleepy');
  // 127.9.9.9 is no bind address of the local relay: every member of this pool fails to be created.
  await applyPool('nowhere', '127.9.9.9');
  gateway = await startCliGateway(stack.home, ['--listen', '127.0.0.1:0', '--metrics', '127.0.0.1:0']);
  impatient = await startCliGateway(stack.home, [
    '--listen',
    '127.0.0.1:0',
    '--metrics',
    '127.0.0.1:0',
    '--wake-timeout',
    `${SHORT_WAKE_SECONDS}s`,
  ]);
});

afterAll(async () => {
  await Promise.all([gateway?.stop(), impatient?.stop()]);
  if (stack && stack.process.exitCode === null) await stack.interrupt();
  rmSync(dir, { recursive: true, force: true });
});

describe('wake: a pool at zero on the local stack', () => {
  it('rests at zero members with no demand', async () => {
    for (const name of ['sleepy', 'nowhere']) {
      const p = await pool(name);
      expect(p.members).toEqual([]);
    }
  });

  it("curl's request is held while the pool wakes and served through its first Ready member", async () => {
    const answer = await curlPool(gateway, 'sleepy', 150);
    expect(answer.status).toBe(200);
    expect(answer.response).toMatch(/"ip"/);
    const p = await pool('sleepy');
    const ready = p.members.filter((m) => m.phase === 'Ready' && !m.draining);
    expect(ready).toHaveLength(1);
    expect(p.status.desiredReplicas).toBe(1);
    // Held until the member was Ready, not answered at once: it became Ready after curl asked (on
    // an idle machine that can be within a second of the request, so no fixed minimum is asserted).
    const env = stack.localEnv();
    const member = await fetch(`${env['EGRESS_API_URL']}/v1/proxies/${ready[0]?.name ?? ''}`, {
      headers: { authorization: `Bearer ${env['EGRESS_TOKEN']}` },
    });
    const conditions = z
      .object({
        status: z.object({ conditions: z.array(z.object({ type: z.string(), lastTransitionTime: z.string() })) }),
      })
      .parse(await member.json()).status.conditions;
    const readyAt = Date.parse(conditions.find((c) => c.type === 'Ready')?.lastTransitionTime ?? '');
    expect(readyAt).toBeGreaterThan(answer.started);
    expect(readyAt).toBeLessThanOrEqual(answer.started + answer.ms);
    const described = await egress('describe', 'pool', 'sleepy');
    expect(described.stdout).toMatch(/Woken.*desired 0 → 1: demand inFlight 0, waiting 1/);
  }, 180_000);

  it('a pool that cannot place a member answers 503 with Retry-After once --wake-timeout has passed', async () => {
    const answer = await curlPool(impatient, 'nowhere', 60);
    expect(answer.status).toBe(503);
    expect(answer.response).toMatch(/^retry-after: \d+\r?$/im);
    expect(answer.response).toMatch(/pool "nowhere" is waking: no member became Ready within \d+s/);
    expect(answer.ms).toBeGreaterThanOrEqual(SHORT_WAKE_SECONDS * 1000);
    expect(answer.ms).toBeLessThan((SHORT_WAKE_SECONDS + 10) * 1000);
    const p = await pool('nowhere');
    expect(p.members.filter((m) => m.phase === 'Ready')).toEqual([]);
  }, 90_000);
});
