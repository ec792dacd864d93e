/**
 * The gateway's fleet API against a private API (test/support/private-api.ts): discovery and
 * reports through the fake Cloud Run IAM front with ID tokens from ADC, renewed before they expire
 * as a long-running gateway needs; without one, Cloud Run's refusal as an ApiError saying what to do.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { apiAuthSettings, createApiAuth } from '../shared/api/cloud-run-auth.js';
import { startPrivateApi, type PrivateApi } from '../test/support/private-api.js';
import { ApiError } from '../shared/api/api-error.js';
import { createFleetApi } from './fleet-api.js';

const TOKEN = 'sekret-for-the-gateway-private-api';
const SA = 'egress-gateway@proj.iam.gserviceaccount.com';

let stack: PrivateApi;
beforeEach(async () => {
  stack = await startPrivateApi({ token: TOKEN, email: SA });
  for (const [name, value] of Object.entries(stack.adcEnv)) vi.stubEnv(name, value);
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await stack.close();
});

const fleetApi = (vars: Record<string, string>) =>
  createFleetApi({
    apiUrl: stack.front.url,
    token: TOKEN,
    auth: createApiAuth(apiAuthSettings(stack.front.url, vars), { now: () => stack.clock.now }),
  });

describe('fleet API behind Cloud Run IAM', () => {
  it('discovers and reports with an ID token, renewed five minutes before it expires', async () => {
    const api = fleetApi({ EGRESS_API_AUTH: 'google' });
    expect(await api.discover({})).toEqual([]);
    stack.clock.now += 50 * 60_000;
    await expect(api.report('p-0', { reason: 'error', detail: 'x' })).rejects.toMatchObject({
      code: 'NotFound',
      status: 404,
    });
    expect(stack.metadata.minted).toHaveLength(1);
    // Past the first token's expiry: only a renewed token gets through.
    stack.clock.now += 20 * 60_000;
    expect(await api.discover({ pool: 'none' })).toEqual([]);
    expect(stack.metadata.minted).toHaveLength(2);
    expect(stack.front.seen.map((s) => s.identity)).toEqual([SA, SA, SA]);
    expect(stack.api.requests.map((r) => r.authorized)).toEqual([true, true, true]);
  });

  it('without an ID token fails with what Cloud Run refused and how to send one', async () => {
    const failure = fleetApi({}).discover({});
    await expect(failure).rejects.toThrow(ApiError);
    await expect(failure).rejects.toThrow(
      /^Cloud Run IAM refused the request before it reached the API \(HTTP 401: .*\): no Google ID token was sent .*set EGRESS_API_AUTH=google/,
    );
    expect(stack.api.requests).toEqual([]);
  });

  it('without credentials fails as an ApiError naming the fix', async () => {
    vi.stubEnv('METADATA_SERVER_DETECTION', 'none');
    const failure = fleetApi({ EGRESS_API_AUTH: 'google' }).discover({});
    await expect(failure).rejects.toThrow(ApiError);
    await expect(failure).rejects.toThrow(/^no Application Default Credentials .*--impersonate-service-account/);
    expect(stack.front.seen).toEqual([]);
  });
});
