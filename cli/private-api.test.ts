/**
 * The CLI against a private API: the real API (test/support/api-server.ts) behind the fake Cloud
 * Run IAM front, with google-auth-library minting ID tokens from the fake metadata server
 * (test/support/private-api.ts). Commands and `egress gateway` get through with an ID token in
 * X-Serverless-Authorization; without one, or as a non-invoker, they say what Cloud Run refused
 * and what to do; the API still checks the product's token.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startPrivateApi, type PrivateApi } from '../test/support/private-api.js';
import { eventually } from '../test/support/eventually.js';
import type { Io } from './commands.js';
import { run } from './run.js';

const TOKEN = 'sekret-for-the-private-api-tests';
const SA = 'egress-cli@proj.iam.gserviceaccount.com';
const FLEET = 'apiVersion: egress.dev/v1\nkind: Proxy\nmetadata: { name: p-1 }\nspec: { provider: local }\n';

let stack: PrivateApi;
let dir: string;
beforeEach(async () => {
  stack = await startPrivateApi({ token: TOKEN, email: SA });
  for (const [name, value] of Object.entries(stack.adcEnv)) vi.stubEnv(name, value);
  dir = mkdtempSync(join(tmpdir(), 'egress-private-api-'));
  writeFileSync(join(dir, 'fleet.yaml'), FLEET);
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await stack.close();
});

async function egress(line: string, env: Record<string, string> = {}, extra: Partial<Io> = {}) {
  let stdout = '';
  let stderr = '';
  const code = await run(line.split(' '), {
    stdout: { isTTY: false, write: (s) => void (stdout += s) },
    stderr: { write: (s) => void (stderr += s) },
    env: { EGRESS_API_URL: stack.front.url, EGRESS_TOKEN: TOKEN, ...env },
    cwd: dir,
    ...extra,
  });
  return { code, stdout, stderr };
}

describe('egress against a private API', () => {
  it('gets through Cloud Run IAM with an ID token from ADC, the API still seeing the product token', async () => {
    const google = { EGRESS_API_AUTH: 'google' };
    expect(await egress('apply -f fleet.yaml', google)).toEqual({
      code: 0,
      stdout: 'proxy/p-1 accepted\n',
      stderr: '',
    });
    await stack.fleet.bus.deliver();
    expect((await egress('get proxies', google)).stdout).toMatch(/^NAME +PROVIDER +PHASE/);
    expect(stack.front.seen).toEqual([
      { path: '/v1/proxies/p-1', identity: SA },
      { path: '/v1/proxies', identity: SA },
    ]);
    expect(stack.api.requests.map((r) => r.authorized)).toEqual([true, true]);
    expect(stack.metadata.minted).toEqual([stack.front.url, stack.front.url]);
  });

  it('without an ID token (auto on a non-Cloud-Run URL) says Cloud Run refused and how to send one', async () => {
    // Cloud Run takes the product's token in Authorization for an ID token, and it is not one: 401.
    const r = await egress('get proxies');
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: Cloud Run IAM refused the request before it reached the API \(HTTP 401: Error: Unauthorized Your client does not have permission to the requested URL \/v1\/proxies\.\): no Google ID token was sent \(EGRESS_API_AUTH=auto and 127\.0\.0\.1:\d+ is not a Cloud Run host\); set EGRESS_API_AUTH=google/,
    );
    expect(stack.api.requests).toEqual([]);
  });

  it('as an identity without roles/run.invoker names the grant; once granted it gets through', async () => {
    stack.front.invokers.clear();
    const r = await egress('get providers', { EGRESS_API_AUTH: 'google' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: Cloud Run IAM refused: grant roles\/run\.invoker to serviceAccount:egress-cli@proj\.iam\.gserviceaccount\.com on the API's Cloud Run service \(HTTP 403: .*\): .*gcloud run services add-iam-policy-binding SERVICE --region REGION --member serviceAccount:egress-cli@proj\.iam\.gserviceaccount\.com --role roles\/run\.invoker\n$/,
    );
    stack.front.invokers.add(SA);
    expect((await egress('get providers', { EGRESS_API_AUTH: 'google' })).code).toBe(0);
  });

  it('a token for another audience is a 401 naming EGRESS_API_AUDIENCE', async () => {
    const r = await egress('get proxies', {
      EGRESS_API_AUTH: 'google',
      EGRESS_API_AUDIENCE: 'https://egress-api-abc123-uc.a.run.app',
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^error: Cloud Run IAM refused the ID token of egress-cli@proj\.iam\.gserviceaccount\.com \(HTTP 401: .*\): .*set EGRESS_API_AUDIENCE/,
    );
  });

  it("a wrong product token passes Cloud Run and is the API's 401", async () => {
    const r = await egress('get proxies', { EGRESS_API_AUTH: 'google', EGRESS_TOKEN: 'not-the-token-at-all' });
    expect(r).toMatchObject({ code: 1, stderr: 'error: missing or invalid bearer token\n' });
    expect(stack.front.seen).toEqual([{ path: '/v1/proxies', identity: SA }]);
    expect(stack.api.requests.map((r) => r.authorized)).toEqual([false]);
  });

  it('a missing ADC is an error naming the fix, before any request', async () => {
    vi.stubEnv('METADATA_SERVER_DETECTION', 'none');
    const r = await egress('get proxies', { EGRESS_API_AUTH: 'google' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^error: no Application Default Credentials .*--impersonate-service-account/);
    expect(stack.front.seen).toEqual([]);
  });

  it('egress gateway starts through Cloud Run IAM with an ID token', async () => {
    const stop = new AbortController();
    const gateway = egress('gateway --listen 127.0.0.1:0', { EGRESS_API_AUTH: 'google' }, { signal: stop.signal });
    await eventually(() => expect(stack.front.seen.length).toBeGreaterThan(0), 5000, 20);
    stop.abort();
    const r = await gateway;
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^http:\/\/[^@]+@127\.0\.0\.1:\d+\n$/);
    expect(stack.front.seen.every((s) => s.identity === SA)).toBe(true);
  });
});
