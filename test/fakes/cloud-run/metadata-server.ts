/**
 * The Compute Engine metadata server, the part google-auth-library 10.9.1 and gcp-metadata 8.1.2
 * use to mint ID tokens, on 127.0.0.1. Point them at it with `GCE_METADATA_HOST=127.0.0.1:PORT`
 * (gcp-metadata's `getBaseUrl` reads `GCE_METADATA_IP`, then `GCE_METADATA_HOST`, and skips the
 * `metadata.google.internal.` fallback when either is set).
 *
 * As the real one (https://cloud.google.com/compute/docs/metadata/querying-metadata): a request
 * without `Metadata-Flavor: Google` is refused with 403, every answer carries `Metadata-Flavor:
 * Google` (gcp-metadata rejects an answer without it). The identity endpoint
 * (https://cloud.google.com/compute/docs/instances/verifying-instance-identity#request_signature)
 * is `instance/service-accounts/default/identity?audience=AUD&format=full` and answers a signed
 * JWT for the VM's service account as plain text; without `audience` it is a 400.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GoogleIdentity } from './google-identity.js';

export interface FakeMetadataServer {
  /** `127.0.0.1:PORT`, the value for `GCE_METADATA_HOST`. */
  host: string;
  /** The audiences ID tokens were minted for, one entry per token. */
  minted: string[];
  close(): Promise<void>;
}

/**
 * @param options.email - the VM's service account
 * @param options.lifetimeS - each token's lifetime (Google's: one hour)
 * @param options.now - the issuer's clock
 */
export async function startFakeMetadataServer(
  identity: GoogleIdentity,
  options: { email: string; project?: string; lifetimeS?: number; now?: () => number },
): Promise<FakeMetadataServer> {
  const minted: string[] = [];
  const now = options.now ?? Date.now;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://metadata');
    const answer = (status: number, body: string) =>
      res.writeHead(status, { 'metadata-flavor': 'Google', 'content-type': 'application/text' }).end(body);
    if (req.headers['metadata-flavor'] !== 'Google') return answer(403, 'Missing Metadata-Flavor:Google header.');
    switch (url.pathname) {
      case '/computeMetadata/v1/instance':
      case '/computeMetadata/v1/instance/':
        return answer(200, 'attributes/\nhostname\nid\nservice-accounts/\nzone\n');
      case '/computeMetadata/v1/project/project-id':
        return answer(200, options.project ?? 'fake-project');
      case '/computeMetadata/v1/instance/service-accounts/default/email':
        return answer(200, options.email);
      case '/computeMetadata/v1/instance/service-accounts/default/identity': {
        const audience = url.searchParams.get('audience');
        if (!audience) return answer(400, 'non-empty audience parameter required');
        minted.push(audience);
        return answer(200, identity.mint(options.email, audience, now(), options.lifetimeS ?? 3600));
      }
      default:
        return answer(404, 'Not Found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    host: `127.0.0.1:${(server.address() as AddressInfo).port}`,
    minted,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
