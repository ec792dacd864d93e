/**
 * The `gcp` provider against refusals the fake Compute API answers as a real project does:
 * organisation policies (412 conditionNotMet), request-rate limits, a disabled API, a loaded
 * `zoneOperations.wait` that answers early, and aggregated lists with an unreachable zone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressError, PermanentError, RetryableError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import type { Provider } from '../../shared/providers/contract.js';
import { createGcpProvider } from '../../shared/providers/gcp/index.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { instanceSpec } from '../support/instance-spec.js';
import { rejectionOf } from '../support/rejection.js';

const logger = createLogger({ write: () => undefined, level: 'ERROR' });
let fake: FakeGce;

const provider = (over: Record<string, unknown> = {}, on: FakeGce = fake): Provider =>
  createGcpProvider({
    provider: {
      name: 'gce',
      type: 'gcp',
      catalogue: {},
      rolloutBudget: 2,
      options: {
        project: 'refusals-project',
        zone: 'us-central1-a',
        operationWaitSeconds: 3,
        ...on.endpoint,
        ...over,
      },
    },
    path: 'config.providers.0',
    config: { installationId: 'it' },
    logger,
  });
const spec = () => instanceSpec('rf');
const failure = (p: Promise<unknown>) => rejectionOf(p, EgressError);

beforeAll(async () => {
  fake = await startFakeGce();
});
afterAll(() => fake?.close());

describe('gcp provider: refusals a real project answers with', () => {
  it('an organisation policy forbidding external IPs is Permanent on accessConfigs, and create does not retry it', async () => {
    fake.deniedConstraints.add('compute.vmExternalIpAccess');
    try {
      const before = fake.count('instances.insert');
      const err = await failure(provider().create(spec()));
      expect(err).toBeInstanceOf(PermanentError);
      expect(err.toInfo()).toMatchObject({ code: 'Permanent', field: 'networkInterfaces[0].accessConfigs' });
      expect(err.message).toContain('constraints/compute.vmExternalIpAccess');
      expect(fake.count('instances.insert') - before).toBe(1);
    } finally {
      fake.deniedConstraints.clear();
    }
  });

  it('a request-rate limit is Retryable, not QuotaExceeded; a disabled API says so', async () => {
    fake.inject({ method: 'instances.insert', kind: 'rateLimit' });
    const limited = await failure(provider().create(spec()));
    expect(limited).toBeInstanceOf(RetryableError);
    expect(limited.message).toMatch(/rate limit/);
    fake.inject({ method: 'instances.insert', kind: 'apiDisabled' });
    const disabled = await failure(provider().create(spec()));
    expect(disabled).toBeInstanceOf(RetryableError);
    expect(disabled.message).toMatch(/Compute Engine API is disabled.*accessNotConfigured/);
  });
});

describe('gcp provider: a loaded Compute API', () => {
  it('a zoneOperations.wait that answers at once is called again after a growing pause, not in a tight loop', async () => {
    const loaded = await startFakeGce({ waitMaxMs: 0, timing: { provisioningMs: 2000 } });
    try {
      const p = provider({ operationWaitSeconds: 4 }, loaded);
      const started = Date.now();
      await p.create(spec());
      // 2 s of PROVISIONING behind answers that return after zero seconds: pauses of
      // 0.25, 0.5, 1 and 2 s make about five calls where a loop without pause makes hundreds.
      expect(Date.now() - started).toBeGreaterThanOrEqual(1900);
      expect(loaded.count('zoneOperations.wait')).toBeLessThanOrEqual(8);
    } finally {
      await loaded.close();
    }
  });
});

describe('gcp provider: aggregated lists', () => {
  it('a list filter the API refuses (400) falls back to the whole list, filtered here', async () => {
    const p = provider();
    const s = spec();
    await p.create(s);
    fake.inject({ method: 'instances.aggregatedList', kind: 'invalidField', field: 'filter' });
    expect((await p.list()).map((i) => i.name)).toContain(s.name);
    await p.delete(s.name);
  });

  it('one unreachable zone does not fail a get of an instance in another zone (returnPartialSuccess)', async () => {
    const s = spec();
    await provider().create(s);
    fake.unreachableZones.add('europe-west1-b');
    try {
      // A fresh provider knows no zone for the name: it searches the aggregated list.
      expect((await provider().get(s.name)).name).toBe(s.name);
      await expect(provider().list()).rejects.toBeInstanceOf(RetryableError);
    } finally {
      fake.unreachableZones.clear();
    }
    await provider().delete(s.name);
  });
});
