/** What the provider end-to-end tests share: a sample config made local, and a user's view of one proxy. */
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { execFile } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'vitest';
import { parse as parseYaml, stringify } from 'yaml';
import { z } from 'zod';
import { proxyDocSchema, type ProxyDoc } from '../../shared/domain/status.js';
import type { RunningStack } from './stack.js';
import { eventually } from '../support/eventually.js';
import type { ApplyRequest } from '../../shared/domain/proxy.js';
import { TlsPinError } from '../../shared/tls/pinned.js';
import { pinnedCurlArgs, presentedCertificate } from '../support/pinned-proxy.js';

const run = promisify(execFile);

const sampleConfigSchema = z
  .object({ providers: z.array(z.object({ options: z.record(z.string(), z.unknown()) }).loose()) })
  .loose();

/**
 * Writes `sample` (a `docs/samples/config/*.yaml` file) to `dir/egress.yaml` with each provider's
 * options passed through `options` (pointing them at a fake) and the short local intervals.
 *
 * @returns the path of the written config
 */
export function localConfigFrom(
  sample: string,
  dir: string,
  options: (sampleOptions: Record<string, unknown>) => Record<string, unknown>,
): string {
  const parsed = sampleConfigSchema.parse(parseYaml(readFileSync(sample, 'utf8')));
  // The stack's echo server is on loopback (port 8088): the fakes' tinyproxy (its ConnectPort
  // lines) admits it only with a policy that allows it.
  const providers = parsed.providers.map((p) => ({ ...p, egress: localEgressPolicy([]), options: options(p.options) }));
  const file = join(dir, 'egress.yaml');
  writeFileSync(
    file,
    stringify({
      ...parsed,
      providers,
      project: 'demo-egress',
      echoUrl: 'http://127.0.0.1:8088/',
      checkIntervalSeconds: 5,
      gcIntervalSeconds: 15,
      healthIntervalSeconds: 5,
      leaseSeconds: 30,
      backoffBaseSeconds: 2,
      backoffMaxSeconds: 60,
    }),
  );
  return file;
}

/** The stored proxy document, parsed, or undefined. */
export async function proxyOf(stack: RunningStack, name: string): Promise<ProxyDoc | undefined> {
  const data = (await stack.db.collection('proxies').doc(name).get()).data();
  return data ? proxyDocSchema.parse(data) : undefined;
}

/** Publishes `body` as JSON to the request topic, as a client would. */
export async function publishRequest(stack: RunningStack, body: unknown): Promise<void> {
  await stack.pubsub.topic('proxy-requests').publishMessage({ data: Buffer.from(JSON.stringify(body)) });
}

/**
 * Checks with curl, as a user would, that the proxy at `address` forwards to the stack's echo
 * server with the credentials stored for `name`, and answers 407 without them.
 */
export async function expectServesOnlyWithCredentials(
  stack: RunningStack,
  name: string,
  address: string,
  echoPort: number,
): Promise<void> {
  const creds = (await stack.db.collection('credentials').doc(name).get()).data();
  const user = encodeURIComponent(String(creds?.['username']));
  const url = `http://${user}:${encodeURIComponent(String(creds?.['password']))}@${address}`;
  const target = `http://127.0.0.1:${echoPort}/`;
  const { stdout } = await run('curl', ['-sS', '--max-time', '5', '-x', url, target]);
  expect(JSON.parse(stdout)).toHaveProperty('ip');
  const refused = await run('curl', ['-s', '-o', '/dev/null', '-w', '%{http_code}', '-x', `http://${address}`, target]);
  expect(refused.stdout).toBe('407');
}

/**
 * A user's view of the proxy's TLS listener: its document names the TLS port and the pinned
 * fingerprint; curl reaches the echo through the `https://` proxy URL trusting that certificate
 * alone (`--proxy-cacert`), and a client pinning another fingerprint is refused before it sends
 * anything.
 *
 * @param host - where clients reach the proxy (its address's host)
 * @param pemFile - where the pinned certificate is written for curl
 */
export async function expectServesOverPinnedTls(
  stack: RunningStack,
  name: string,
  host: string,
  echoPort: number,
  pemFile: string,
): Promise<void> {
  const status = (await proxyOf(stack, name))?.status;
  const { port, tlsPort, tlsFingerprint } = status?.instance ?? {};
  expect(tlsPort).toBe((port ?? 0) + 1);
  expect(tlsFingerprint).toMatch(/^[0-9a-f]{64}$/);
  expect(status?.conditions.find((c) => c.type === 'TlsPinned')?.status).toBe('True');
  const creds = (await stack.db.collection('credentials').doc(name).get()).data();
  const auth = `${encodeURIComponent(String(creds?.['username']))}:${encodeURIComponent(String(creds?.['password']))}`;
  const certificate = await presentedCertificate(host, tlsPort ?? 0, tlsFingerprint);
  const pinned = await pinnedCurlArgs({ host, port: tlsPort ?? 0, auth }, certificate, pemFile);
  const { stdout } = await run('curl', ['-sS', '--max-time', '10', ...pinned, `http://127.0.0.1:${echoPort}/`]);
  expect(JSON.parse(stdout)).toHaveProperty('ip');
  await expect(presentedCertificate(host, tlsPort ?? 0, 'ab'.repeat(32))).rejects.toThrow(TlsPinError);
}

/** The check function's bundle imports `pkg` only dynamically: functions without that provider never load it. */
export function expectLoadedLazily(pkg: string): void {
  const bundle = readFileSync('dist/functions/check/index.js', 'utf8');
  const name = pkg.replace(/[/.]/g, (c) => `\\${c}`);
  expect(bundle).toMatch(new RegExp(`import\\(\\s*["']${name}["']\\s*\\)`));
  expect(bundle).not.toMatch(new RegExp(`^import[^;]*from\\s*["']${name}["']`, 'm'));
}

/** Publishes every sample to the request topic and waits until each proxy is Ready. */
export async function publishUntilReady(
  stack: RunningStack,
  samples: ApplyRequest[],
  timeoutMs: number,
): Promise<void> {
  for (const doc of samples) await publishRequest(stack, doc);
  await eventually(
    async () => {
      for (const doc of samples) expect((await proxyOf(stack, doc.metadata.name))?.status.phase).toBe('Ready');
    },
    timeoutMs,
    500,
  );
}
