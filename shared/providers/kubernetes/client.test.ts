/** metadataTokenSource: the GKE token is asked with the scopes GKE needs to see the account's email. */
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { metadataTokenSource } from './client.js';

let asked: IncomingMessage | undefined;
const metadata = createServer((req, res) => {
  asked = req;
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ access_token: 'ya29.token', expires_in: 3599, token_type: 'Bearer' }));
});
let url = '';

beforeAll(async () => {
  await new Promise<void>((resolve) => metadata.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(metadata.address() as AddressInfo).port}/computeMetadata/v1/instance/service-accounts/default/token`;
});
afterAll(() => new Promise<void>((resolve) => metadata.close(() => resolve())));

describe('metadataTokenSource', () => {
  it('asks for cloud-platform and userinfo.email, with the Metadata-Flavor header', async () => {
    const before = Date.now();
    const { token, expiresAt } = await metadataTokenSource(url, 2000)();
    expect(token).toBe('ya29.token');
    expect(expiresAt).toBeGreaterThanOrEqual(before + 3599_000);
    const query = new URL(asked?.url ?? '', 'http://x');
    expect(query.pathname).toBe('/computeMetadata/v1/instance/service-accounts/default/token');
    expect(query.searchParams.get('scopes')?.split(',')).toEqual([
      'https://www.googleapis.com/auth/cloud-platform',
      'https://www.googleapis.com/auth/userinfo.email',
    ]);
    expect(asked?.headers['metadata-flavor']).toBe('Google');
  });
});
