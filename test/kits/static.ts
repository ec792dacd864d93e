/**
 * The `static` provider's kit: the provider built by the registry as the functions build it (its
 * claims in the Firestore emulator), its endpoints real tinyproxies standing in for a vendor's
 * (test/support/static-harness.ts, test/support/static-vendor.ts).
 */
import { startStaticHarness } from '../support/static-harness.js';
import type { ProviderKit } from './kit.js';

export const staticKit = {
  type: 'static',
  contract: {
    timeoutMs: 15_000,
    skip: [
      { reason: 'probesRemotely is false: the check function probes the endpoints', tests: ['remote-health'] },
      { reason: 'no listSince: GC lists the claims whole (one query)', tests: ['list-since-vouch'] },
      {
        reason:
          'create claims an endpoint in one transaction and returns it Running: nothing happens after it returns that could fail',
        tests: ['async-failure-failed'],
      },
      {
        reason:
          'the endpoint is not ours to stop: after a release it still serves whoever has its credentials (the vendor’s, not per proxy); what the rule protects holds anyway, as one endpoint is never held by two instances (claims are transactional)',
        tests: ['report-until-gone'],
      },
    ],
    async setup() {
      // Nine endpoints: the shared instance, five concurrent creates, and the tests that create one
      // more each; no rest after a release, so a test's deleted endpoints serve the next test.
      const h = await startStaticHarness('contract-static', 9, { releaseCooldownSeconds: 0 });
      return {
        provider: h.provider,
        installationId: h.config.installationId,
        placement: {},
        invalidPlacement: { placement: { zone: 'europe-west1-b' }, field: 'spec.placement.zone' },
        // The vendor's endpoint goes down: get finds it no longer accepts connections.
        async kill(instance) {
          await Promise.resolve(h.vendor.stop(instance.port));
        },
        failLater: (spec) => spec,
        // The endpoint's own credentials, which the claim stored as the proxy's (credentials/{proxy}).
        async credentials(spec) {
          const stored = await h.proxies.credentials(spec.proxy);
          if (!stored) throw new Error(`the claim stored no credentials for ${spec.proxy}`);
          return stored;
        },
        cleanup: () => h.close(),
      };
    },
  },
  guarantees: {
    absent:
      'no world yet: a ground would serve the claims from vendor stand-ins (test/support/static-vendor.ts) and count them in the claim store; the static provider: integration tests cover its reconcile',
  },
  e2e: { absent: 'the demand e2e (test/e2e/demand.test.ts) adds a static provider to the local stack and drives it' },
} satisfies ProviderKit;
