/**
 * The ID-token path to a private API: which settings send a token and for which audience; the real
 * google-auth-library minting from the fake metadata server (test/fakes/cloud-run/), the token
 * cached until five minutes before its expiry; the errors that name the credential and the fix;
 * Cloud Run's refusals told apart from the API's answers.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createGoogleIdentity } from '../../test/fakes/cloud-run/google-identity.js';
import { startFakeMetadataServer, type FakeMetadataServer } from '../../test/fakes/cloud-run/metadata-server.js';
import { ValidationError } from '../errors.js';
import { apiAuthSettings, createApiAuth, type ApiAuthSettings } from './cloud-run-auth.js';
import { IdTokenError, readIdToken } from './id-token.js';

const RUN_APP = 'https://egress-api-abc123-uc.a.run.app';
const SA = 'egress-crawler@proj.iam.gserviceaccount.com';

describe('apiAuthSettings', () => {
  it.each([
    ['http://127.0.0.1:8095', {}, 'none', 'http://127.0.0.1:8095'],
    [RUN_APP, {}, 'google', RUN_APP],
    [
      'https://egress-api-123456789.europe-west1.run.app/',
      {},
      'google',
      'https://egress-api-123456789.europe-west1.run.app',
    ],
    [
      'https://europe-west1-proj.cloudfunctions.net/egress-api',
      {},
      'google',
      'https://europe-west1-proj.cloudfunctions.net/egress-api',
    ],
    [RUN_APP, { EGRESS_API_AUTH: 'none' }, 'none', RUN_APP],
    ['http://127.0.0.1:8095', { EGRESS_API_AUTH: 'google' }, 'google', 'http://127.0.0.1:8095'],
    [
      'https://api.example.com/egress',
      { EGRESS_API_AUTH: 'google', EGRESS_API_AUDIENCE: `${RUN_APP}/` },
      'google',
      RUN_APP,
    ],
  ] as const)('%s with %j: %s for %s', (url, vars, mode, audience) => {
    expect(apiAuthSettings(url, vars)).toMatchObject({ mode, audience });
  });

  it.each([
    [RUN_APP, { EGRESS_API_AUTH: 'iam' }, /^EGRESS_API_AUTH: must be auto, google, none \(got "iam"\)/],
    [RUN_APP, { EGRESS_API_AUDIENCE: 'egress-api' }, /^EGRESS_API_AUDIENCE: must be the service's URL/],
    [
      'http://10.0.0.5:8080',
      { EGRESS_API_AUTH: 'google' },
      /^EGRESS_API_AUTH: google sends an ID token; the API URL must be https/,
    ],
  ])('%s with %j is refused', (url, vars, message) => {
    expect(() => apiAuthSettings(url, vars)).toThrow(ValidationError);
    expect(() => apiAuthSettings(url, vars)).toThrow(message);
  });
});

describe('refusals', () => {
  const page =
    '<html><title>403 Forbidden</title><h1>Error: Forbidden</h1><h2>Your client does not have permission</h2></html>';
  it('leaves the API answers alone and names what to do with Cloud Run refusals', () => {
    const none = createApiAuth(apiAuthSettings('http://127.0.0.1:1', {}));
    expect(none.refusal(401, '{"error":{"code":"Unauthorized","message":"bad token"}}')).toBeUndefined();
    expect(none.refusal(500, page)).toBeUndefined();
    expect(none.refusal(403, page)).toMatch(
      /^Cloud Run IAM refused the request before it reached the API \(HTTP 403: Error: Forbidden Your client does not have permission\): no Google ID token was sent \(EGRESS_API_AUTH=auto and 127\.0\.0\.1:1 is not a Cloud Run host\); set EGRESS_API_AUTH=google/,
    );
  });
});

describe('ID tokens from Application Default Credentials', () => {
  const identity = createGoogleIdentity();
  const clock = { now: Date.parse('2026-12-06T12:00:00Z') };
  const now = () => clock.now;
  let metadata: FakeMetadataServer;
  const settings = (vars = {}): ApiAuthSettings => apiAuthSettings(RUN_APP, vars);
  const tokenOf = async (auth: ReturnType<typeof createApiAuth>) =>
    ((await auth.headers())['x-serverless-authorization'] ?? '').replace(/^Bearer /, '');

  beforeAll(async () => {
    metadata = await startFakeMetadataServer(identity, { email: SA, now });
  });
  afterAll(() => metadata.close());
  beforeEach(() => {
    vi.stubEnv('GCE_METADATA_HOST', metadata.host);
    vi.stubEnv('GOOGLE_APPLICATION_CREDENTIALS', '');
    vi.stubEnv('METADATA_SERVER_DETECTION', '');
    vi.stubEnv('CLOUDSDK_CONFIG', mkdtempSync(join(tmpdir(), 'egress-no-gcloud-')));
    vi.stubEnv('GOOGLE_CLOUD_PROJECT', 'fake-project');
    metadata.minted.length = 0;
  });
  afterEach(() => vi.unstubAllEnvs());

  it('mints one for the service URL, keeps it, and mints again five minutes before it expires', async () => {
    const auth = createApiAuth(settings(), { now });
    const first = await tokenOf(auth);
    expect(identity.verify(first, clock.now)).toMatchObject({ aud: RUN_APP, email: SA });
    expect(await tokenOf(auth)).toBe(first);
    clock.now += 54 * 60_000; // six minutes left
    expect(await tokenOf(auth)).toBe(first);
    expect(metadata.minted).toEqual([RUN_APP]);
    clock.now += 2 * 60_000; // four minutes left
    const second = await tokenOf(auth);
    expect(second).not.toBe(first);
    expect(readIdToken(second, 'x').expiresAt).toBe(clock.now - (clock.now % 1000) + 3_600_000);
    expect(metadata.minted).toEqual([RUN_APP, RUN_APP]);
  });

  it('asks once for concurrent requests', async () => {
    const auth = createApiAuth(settings(), { now });
    const tokens = await Promise.all([tokenOf(auth), tokenOf(auth), tokenOf(auth)]);
    expect(new Set(tokens).size).toBe(1);
    expect(metadata.minted).toHaveLength(1);
  });

  it('sends nothing and asks nothing in mode none', async () => {
    expect(await createApiAuth(settings({ EGRESS_API_AUTH: 'none' })).headers()).toEqual({});
    expect(await createApiAuth(undefined).headers()).toEqual({});
    expect(metadata.minted).toEqual([]);
  });

  it('names the fix when there are no credentials at all', async () => {
    vi.stubEnv('METADATA_SERVER_DETECTION', 'none');
    const failure = createApiAuth(settings()).headers();
    await expect(failure).rejects.toThrow(IdTokenError);
    await expect(failure).rejects.toThrow(
      /^no Application Default Credentials \(Could not load the default credentials\): .*gcloud auth application-default login --impersonate-service-account SA@PROJECT\.iam\.gserviceaccount\.com.*GOOGLE_APPLICATION_CREDENTIALS.*EGRESS_ID_TOKEN=\$\(gcloud auth print-identity-token\)/,
    );
  });

  it.each([
    [
      'user credentials',
      { type: 'authorized_user', client_id: 'c', client_secret: 's', refresh_token: 'r' },
      /^Application Default Credentials are user credentials \(gcloud auth application-default login\), which cannot mint an ID token/,
    ],
    [
      'workload identity federation',
      {
        type: 'external_account',
        audience: '//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/q',
        subject_token_type: 'urn:ietf:params:oauth:token-type:jwt',
        token_url: 'https://sts.googleapis.com/v1/token',
        credential_source: { file: '/nonexistent' },
      },
      /^Application Default Credentials of type IdentityPoolClient \(GOOGLE_APPLICATION_CREDENTIALS\) cannot mint ID tokens: give the client a service account identity/,
    ],
  ])('refuses %s, which cannot mint a token for the API', async (_what, json, message) => {
    const file = join(mkdtempSync(join(tmpdir(), 'egress-adc-')), 'adc.json');
    writeFileSync(file, JSON.stringify(json));
    vi.stubEnv('GOOGLE_APPLICATION_CREDENTIALS', file);
    await expect(createApiAuth(settings()).headers()).rejects.toThrow(message);
    expect(metadata.minted).toEqual([]);
  });

  it('sends EGRESS_ID_TOKEN as it is until it expires, then says how to renew it', async () => {
    const given = identity.mint('dev@example.com', '32555940559.apps.googleusercontent.com', clock.now, 3600);
    const auth = createApiAuth(settings({ EGRESS_ID_TOKEN: given }), { now });
    expect(await tokenOf(auth)).toBe(given);
    clock.now += 3600_000;
    await expect(auth.headers()).rejects.toThrow(
      /^EGRESS_ID_TOKEN expired at .*: export EGRESS_ID_TOKEN=\$\(gcloud auth print-identity-token\) again/,
    );
    await expect(createApiAuth(settings({ EGRESS_ID_TOKEN: 'abc' })).headers()).rejects.toThrow(
      /^EGRESS_ID_TOKEN is not a Google ID token/,
    );
    expect(metadata.minted).toEqual([]);
  });
});
