/**
 * Each provider with an e2e kit (test/kits/<type>.ts) through the functions on the emulators, as a
 * user drives it: `npm start` with the provider's sample config pointed at the kit's backend (a
 * wire-level fake), the sample proxies published to the request topic, Ready (probed through each
 * instance's real proxy), reachable with their credentials, then deleted. One stack per provider,
 * one after the other.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseProxyDocuments } from '../../shared/domain/documents.js';
import { eventually } from '../support/eventually.js';
import type { E2eBackend, E2eKit } from '../kits/kit.js';
import { KIT_LIST, serves } from '../kits/registry.js';
import {
  expectLoadedLazily,
  expectServesOnlyWithCredentials,
  localConfigFrom,
  proxyOf,
  publishRequest,
  publishUntilReady,
} from './provider-stack.js';
import { startLocalStack, type RunningStack } from './stack.js';

/** The stacks run one after the other (each stopped by its Ctrl-C test): one port offset serves them all. */
const OFFSET = 400;
const ECHO_PORT = 8088 + OFFSET;

function providerSpec(type: string, kit: E2eKit): void {
  const dir = mkdtempSync(join(tmpdir(), `egress-e2e-${type}-`));
  const samples = parseProxyDocuments(readFileSync(kit.samples, 'utf8'));
  let backend: E2eBackend;
  let stack: RunningStack;

  beforeAll(async () => {
    backend = await kit.start();
    stack = await startLocalStack({
      EGRESS_PORT_OFFSET: String(OFFSET),
      EGRESS_SAMPLES: 'none',
      // The sample config with the provider's options pointed at the backend, and local intervals.
      EGRESS_CONFIG: localConfigFrom(kit.config, dir, (options) => backend.options(options)),
    });
  });

  afterAll(async () => {
    if (stack && stack.process.exitCode === null) await stack.interrupt();
    await backend?.close();
  });

  it(`the function bundles load the ${kit.sdk.title} SDK only when a ${type} provider is used`, () => {
    expectLoadedLazily(kit.sdk.pkg);
  });

  it(`the sample proxies published to proxy-requests become Ready as ${kit.instances}, reachable with their credentials`, async () => {
    await publishUntilReady(stack, samples, kit.readyWithinMs);
    backend.expectPlaced();
    for (const doc of samples) {
      const name = doc.metadata.name;
      const status = (await proxyOf(stack, name))?.status;
      const host = backend.host(name);
      expect(status?.address).toBe(`${host}:${doc.spec.port || kit.defaultPort}`);
      if (!status || !host) throw new Error(`${name}: no status or no instance`);
      await expectServesOnlyWithCredentials(stack, name, status.address ?? '', ECHO_PORT);
      await backend.expectServing({ stack, name, status, host, echoPort: ECHO_PORT, dir });
    }
    for (const provider of new Set(samples.map((doc) => doc.spec.provider))) {
      const health = (await stack.db.collection('providers').doc(provider).get()).data();
      expect(health?.['status']).toBe('Healthy');
    }
  });

  it(`a delete request removes ${kit.removes}, the document and the credentials`, async () => {
    for (const doc of samples) await publishRequest(stack, { ...doc, action: 'delete' });
    await eventually(
      async () => {
        for (const doc of samples) {
          const name = doc.metadata.name;
          expect(await proxyOf(stack, name)).toBeUndefined();
          backend.expectGone(name);
          expect((await stack.db.collection('credentials').doc(name).get()).exists).toBe(false);
        }
      },
      60_000,
      500,
    );
    backend.expectNoneLeft?.();
  });

  it('Ctrl-C stops the stack cleanly', async () => {
    expect(await stack.interrupt()).toBe(0);
  });
}

for (const kit of KIT_LIST) {
  const e2e = kit.e2e;
  if (serves(e2e)) describe(`e2e: ${kit.type} provider through the functions`, () => providerSpec(kit.type, e2e));
}
