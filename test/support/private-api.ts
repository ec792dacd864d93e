/**
 * The API as a private Cloud Run service, on loopback: the real API handler (api-server.ts) over a
 * MemoryFleet, behind the fake Cloud Run IAM front, with the fake metadata server that
 * google-auth-library mints ID tokens from (test/fakes/cloud-run/). One clock drives the issuer,
 * the front and the clients' token cache.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createGoogleIdentity, type GoogleIdentity } from '../fakes/cloud-run/google-identity.js';
import { startIamFront, type IamFront } from '../fakes/cloud-run/iam-front.js';
import { startFakeMetadataServer, type FakeMetadataServer } from '../fakes/cloud-run/metadata-server.js';
import { startApiServer, type ApiServer } from './api-server.js';
import { startMemoryFleet, type MemoryFleet } from './memory-fleet.js';

export interface PrivateApi {
  fleet: MemoryFleet;
  api: ApiServer;
  front: IamFront;
  metadata: FakeMetadataServer;
  identity: GoogleIdentity;
  /** The shared clock, in ms; tests move it. */
  clock: { now: number };
  /** The variables that make google-auth-library use the fake metadata server and nothing else. */
  adcEnv: Record<string, string>;
  close(): Promise<void>;
}

/**
 * @param options.token - the API's bearer token (16 characters at least)
 * @param options.email - the metadata server's service account
 * @param options.invoker - whether that account has roles/run.invoker (default true)
 */
export async function startPrivateApi(options: {
  token: string;
  email: string;
  invoker?: boolean;
}): Promise<PrivateApi> {
  const clock = { now: Date.now() };
  const now = () => clock.now;
  const identity = createGoogleIdentity();
  const fleet = await startMemoryFleet({ apiTokens: [options.token] });
  const api = await startApiServer(fleet);
  const front = await startIamFront(identity, api.url, {
    invokers: options.invoker === false ? [] : [options.email],
    now,
  });
  const metadata = await startFakeMetadataServer(identity, { email: options.email, now });
  const adcEnv = {
    GCE_METADATA_HOST: metadata.host,
    GCE_METADATA_IP: '',
    METADATA_SERVER_DETECTION: '',
    GOOGLE_APPLICATION_CREDENTIALS: '',
    // No gcloud ADC file of the machine's user: an empty config directory.
    CLOUDSDK_CONFIG: mkdtempSync(join(tmpdir(), 'egress-no-gcloud-')),
    GOOGLE_CLOUD_PROJECT: 'fake-project',
  };
  return {
    fleet,
    api,
    front,
    metadata,
    identity,
    clock,
    adcEnv,
    async close() {
      await Promise.all([front.close(), metadata.close(), api.close()]);
    },
  };
}
