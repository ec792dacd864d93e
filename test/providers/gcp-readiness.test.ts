/**
 * The `gcp` provider's readiness signal as a real guest gives it: the guest attribute PUT to the
 * metadata server may be lost (the guest retries), a VM may restart (the guest sets it again on
 * every boot, from an enabled systemd unit, since cloud-init's runcmd runs once per instance), and a
 * guest that never sets it ends Failed with the reason instead of Pending for good.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../shared/logger.js';
import type { Provider } from '../../shared/providers/contract.js';
import { READY_ATTEMPTS, READY_ATTRIBUTE } from '../../shared/providers/gcp/cloud-init.js';
import { createGcpProvider } from '../../shared/providers/gcp/index.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { eventually } from '../support/eventually.js';
import { instanceSpec } from '../support/instance-spec.js';

const logger = createLogger({ write: () => undefined, level: 'ERROR' });
let fake: FakeGce;
/** The provider's clock runs this far ahead of the fake's (to pass readySeconds without waiting it out). */
let ahead = 0;

/** A fresh provider each time: a new function instance, with no readiness remembered. */
const provider = (): Provider =>
  createGcpProvider({
    provider: {
      name: 'gce',
      type: 'gcp',
      catalogue: {},
      rolloutBudget: 2,
      options: { project: 'ready-project', zone: 'us-central1-a', readySeconds: 60, ...fake.endpoint },
    },
    path: 'config.providers.0',
    config: { installationId: 'it' },
    logger,
    now: () => Date.now() + ahead,
  });

beforeAll(async () => {
  fake = await startFakeGce();
});
afterEach(() => {
  fake.loseGuestPuts(0);
  ahead = 0;
});
afterAll(() => fake?.close());

describe('gcp provider: the readiness guest attribute', () => {
  it('is retried by the guest when the metadata server loses PUTs', async () => {
    fake.loseGuestPuts(3);
    const s = instanceSpec('rd');
    await provider().create(s);
    await eventually(async () => expect((await provider().get(s.name)).state).toBe('Running'), 15_000);
    expect(fake.find(s.name)?.puts).toBe(4);
  });

  it('is set again on every boot: after a reset the VM comes back Running', async () => {
    const s = instanceSpec('rd');
    await provider().create(s);
    await eventually(async () => expect((await provider().get(s.name)).state).toBe('Running'), 15_000);
    fake.resetInstance(s.name);
    await eventually(() => expect(fake.find(s.name)?.boots).toBe(2), 10_000);
    await eventually(() => expect(fake.find(s.name)?.attributes.get(READY_ATTRIBUTE)).toBeDefined(), 10_000);
    expect((await provider().get(s.name)).state).toBe('Running');
  });

  it('never set: Pending, then Failed (Retryable, naming the attribute) once readySeconds have passed since the start', async () => {
    fake.loseGuestPuts(1_000_000);
    const s = instanceSpec('rd');
    const p = provider();
    await p.create(s);
    await eventually(() => expect(fake.find(s.name)?.puts).toBe(READY_ATTEMPTS), 15_000);
    expect((await p.get(s.name)).state).toBe('Pending');
    ahead = 61_000;
    const late = await p.get(s.name);
    expect(late.state).toBe('Failed');
    expect(late.error?.code).toBe('Retryable');
    expect(late.error?.message).toContain(READY_ATTRIBUTE);
  });
});
