/**
 * The `gcp` provider's own behaviour against the fake Compute API: error mapping by code and
 * reason, placement errors naming their field, asynchronous insert failures, unreachable zones,
 * ownership, several providers side by side, and one child span per Compute call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EgressError, NotFoundError, QuotaExceededError, RetryableError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import type { InstanceSpec, Provider } from '../../shared/providers/contract.js';
import { createGcpProvider } from '../../shared/providers/gcp/index.js';
import { instrument } from '../../shared/providers/instrument.js';
import { startFakeGce, type FakeGce } from '../fakes/gce/index.js';
import { eventually } from '../support/eventually.js';
import { instanceSpec } from '../support/instance-spec.js';
import { rejectionOf } from '../support/rejection.js';
import { recordSpans } from '../support/span-recorder.js';
import { inSpan } from '../../shared/telemetry/spans.js';

const lines: string[] = [];
const logger = createLogger({ write: (l) => lines.push(l), level: 'DEBUG' });
let fake: FakeGce;
let n = 0;

const build = (fakeGce: FakeGce, over: Record<string, unknown> = {}, installationId = 'it', name = 'gce'): Provider =>
  instrument(
    createGcpProvider({
      provider: {
        name,
        type: 'gcp',
        catalogue: {},
        rolloutBudget: 2,
        options: {
          project: 'faults-project',
          zone: 'us-central1-a',
          operationWaitSeconds: 3,
          ...fakeGce.endpoint,
          ...over,
        },
      },
      path: 'config.providers.0',
      config: { installationId },
      logger,
    }),
    logger,
  );
const spec = (placement: Record<string, unknown> = {}, over: Partial<InstanceSpec> = {}): InstanceSpec =>
  instanceSpec('gp', placement, over);
const failure = (p: Promise<unknown>) => rejectionOf(p, EgressError);
const running = (p: Provider, name: string) =>
  eventually(async () => {
    const i = await p.get(name);
    expect(i.state).toBe('Running');
    return i;
  }, 15_000);

beforeAll(async () => {
  fake = await startFakeGce();
});
afterAll(() => fake?.close());

describe('gcp provider: errors by code and reason', () => {
  it('a quota refusal of the insert is QuotaExceeded; a rate limit is Retryable', async () => {
    const p = build(fake);
    fake.inject({ method: 'instances.insert', kind: 'quota' });
    const quota = await failure(p.create(spec()));
    expect(quota).toBeInstanceOf(QuotaExceededError);
    expect(quota.message).toContain('quotaExceeded');
    fake.inject({ method: 'instances.insert', kind: 'rateLimit' });
    expect(await failure(p.create(spec()))).toBeInstanceOf(RetryableError);
  });

  it('5xx, a dropped connection, a slow answer and an API that is down are Retryable', async () => {
    const p = build(fake, { callTimeoutSeconds: 1 });
    fake.inject({ method: 'instances.insert', kind: 'serverError' });
    expect(await failure(p.create(spec()))).toBeInstanceOf(RetryableError);
    fake.inject({ method: 'instances.aggregatedList', kind: 'drop' });
    expect(await failure(p.get('ep-nothing-here'))).toBeInstanceOf(RetryableError);
    fake.inject({ method: 'instances.aggregatedList', kind: 'slow', delayMs: 2500 });
    const started = Date.now();
    const slow = await failure(p.get('ep-nothing-here'));
    expect(slow).toBeInstanceOf(RetryableError);
    expect(slow.message).toMatch(/timeout/);
    expect(Date.now() - started).toBeLessThan(2400);
    fake.setDown(true);
    try {
      expect(await failure(p.list())).toBeInstanceOf(RetryableError);
      const health = await p.check?.();
      expect(health?.ok).toBe(false);
      expect(health?.message).toMatch(/not reachable/);
    } finally {
      fake.setDown(false);
    }
    expect((await p.check?.())?.ok).toBe(true);
  });

  it('a missing permission is reported by name by check, and create backs off on it', async () => {
    const p = build(fake);
    fake.inject({ method: 'zones.get', kind: 'forbidden' });
    const health = await p.check?.();
    expect(health).toMatchObject({ ok: false });
    expect(health?.message).toContain('compute.zones.get');
    fake.inject({ method: 'instances.insert', kind: 'forbidden' });
    const denied = await failure(p.create(spec()));
    expect(denied).toBeInstanceOf(RetryableError);
    expect(denied.message).toContain('compute.instances.create');
  });

  it('invalid zone, machine type and image are Permanent errors naming the placement field', async () => {
    const p = build(fake);
    const cases: [Record<string, unknown>, string][] = [
      [{ zone: 'mars-central1-a' }, 'spec.placement.zone'],
      [{ machineType: 'e2-gigantic' }, 'spec.placement.machineType'],
      [{ image: 'projects/ubuntu-os-cloud/global/images/family/ubuntu-1004-lts' }, 'spec.placement.image'],
    ];
    for (const [placement, field] of cases) {
      const err = await failure(p.create(spec(placement)));
      expect(err.toInfo(), JSON.stringify(placement)).toMatchObject({ code: 'Permanent', field });
    }
    expect(() => p.resolvePlacement({ region: 'us-central1' })).toThrow(/spec\.placement\.region/);
  });
});

describe('gcp provider: asynchronous insert failures', () => {
  it('an insert whose operation fails after create returned is a Failed instance with the error, until deleted', async () => {
    const p = build(fake, { operationWaitSeconds: 0.2 });
    const s = spec();
    fake.inject({
      method: 'instances.insert',
      kind: 'operationError',
      code: 'ZONE_RESOURCE_POOL_EXHAUSTED',
      afterMs: 800,
    });
    expect((await p.create(s)).state).toBe('Pending');
    const failed = await eventually(async () => {
      const i = await p.get(s.name);
      expect(i.state).toBe('Failed');
      return i;
    }, 10_000);
    expect(failed).toMatchObject({ specHash: s.specHash, error: { code: 'QuotaExceeded' } });
    expect(failed.error?.message).toContain('ZONE_RESOURCE_POOL_EXHAUSTED');
    expect(failed.createdAt).toBeGreaterThan(0);
    // A fresh provider (another function instance) sees the same failure, from the operation itself.
    const other = build(fake, { operationWaitSeconds: 0.2 });
    expect(await other.get(s.name)).toMatchObject({ state: 'Failed', specHash: s.specHash });
    await other.delete(s.name);
    await expect(p.get(s.name)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a failure within the wait is thrown by create; a permanent one names its field from the location', async () => {
    const p = build(fake);
    fake.inject({ method: 'instances.insert', kind: 'operationError', code: 'QUOTA_EXCEEDED', afterMs: 100 });
    const s = spec();
    expect(await failure(p.create(s))).toBeInstanceOf(QuotaExceededError);
    await expect(p.get(s.name)).rejects.toBeInstanceOf(NotFoundError);
    fake.inject({
      method: 'instances.insert',
      kind: 'operationError',
      code: 'INVALID_FIELD_VALUE',
      location: 'resource.machineType',
      afterMs: 100,
    });
    const invalid = await failure(p.create(spec()));
    expect(invalid.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.machineType' });
  });
});

describe('gcp provider: listing and ownership', () => {
  it('an unreachable zone makes list throw and keeps get from saying NotFound', async () => {
    const p = build(fake);
    fake.unreachableZones.add('europe-west1-b');
    try {
      expect(await failure(p.list())).toBeInstanceOf(RetryableError);
      expect(await failure(p.get(`ep-absent-${n++}`))).toBeInstanceOf(RetryableError);
    } finally {
      fake.unreachableZones.clear();
    }
    await expect(p.get(`ep-absent-${n++}`)).rejects.toBeInstanceOf(NotFoundError);
  });

  it('list reads every page of the aggregated list', async () => {
    const paged = await startFakeGce({ pageSize: 1 });
    try {
      const p = build(paged);
      const specs = [spec(), spec({ zone: 'europe-west1-b' }), spec({ zone: 'us-east1-c' })];
      await Promise.all(specs.map((s) => p.create(s)));
      expect((await p.list()).map((i) => i.name).sort()).toEqual(specs.map((s) => s.name).sort());
      expect(paged.requests.filter((r) => r.method === 'instances.aggregatedList').length).toBeGreaterThanOrEqual(3);
    } finally {
      await paged.close();
    }
  });

  it('another installation’s VM in the same project is neither listed nor deleted', async () => {
    const mine = build(fake, {}, 'inst-a');
    const theirs = build(fake, {}, 'inst-b');
    const s = spec({}, { installationId: 'inst-b' });
    await theirs.create(s);
    await running(theirs, s.name);
    expect((await mine.list()).map((i) => i.name)).not.toContain(s.name);
    expect((await failure(mine.delete(s.name))).code).toBe('Permanent');
    expect((await theirs.get(s.name)).state).toBe('Running');
    await theirs.delete(s.name);
  });

  it('several gcp providers side by side each use their own client and project', async () => {
    const second = await startFakeGce();
    try {
      const a = build(fake, { project: 'project-a' }, 'it', 'gce-a');
      const b = build(second, { project: 'project-b' }, 'it', 'gce-b');
      const [sa, sb] = [spec(), spec()];
      const before = second.count('instances.insert');
      await Promise.all([a.create(sa), b.create(sb)]);
      const [ia, ib] = await Promise.all([running(a, sa.name), running(b, sb.name)]);
      expect(second.count('instances.insert')).toBe(before + 1);
      expect(fake.find(sa.name)?.project).toBe('project-a');
      expect(second.find(sb.name)?.project).toBe('project-b');
      expect(ia.ip).not.toBe(ib.ip);
      await Promise.all([a.delete(sa.name), b.delete(sb.name)]);
    } finally {
      await second.close();
    }
  });
});

describe('gcp provider: tracing and secrets', () => {
  it('each Compute call is a child span named after it; no span or log line carries the credentials', async () => {
    const recorder = recordSpans();
    lines.length = 0;
    const s = spec();
    try {
      const p = build(fake);
      await p.create(s);
      const instance = await running(p, s.name);
      await p.delete(s.name);
      await p.check?.();
      expect(instance.ip).toMatch(/^127\./);
      const names = recorder.ofTracer('egress/gcp').map((x) => x.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'compute.instances.insert',
          'compute.zoneOperations.wait',
          'compute.instances.get',
          'compute.instances.getGuestAttributes',
          'compute.instances.delete',
          'compute.zones.get',
        ]),
      );
      expect(recorder.spans().map((x) => x.name)).toEqual(
        expect.arrayContaining(['provider.create', 'provider.check']),
      );
      const insert = recorder.spans().find((x) => x.name === 'compute.instances.insert');
      expect(insert?.attributes).toMatchObject({ 'gcp.project': 'faults-project', 'gcp.zone': 'us-central1-a' });
      expect(recorder.open()).toEqual([]);
      const everything = JSON.stringify(recorder.spans().map((x) => x.attributes)) + lines.join('\n');
      expect(everything).not.toContain(s.credentials.password);
    } finally {
      await recorder.stop();
    }
  });

  it('the Compute call spans are children of the provider operation span (from the decorator)', async () => {
    const recorder = recordSpans();
    try {
      const p = build(fake);
      const s = spec();
      await inSpan('operation', {}, () => p.create(s));
      const [outer] = recorder.named('operation');
      if (!outer) throw new Error('no outer span');
      const [operation] = recorder.childrenOf(outer).filter((x) => x.name === 'provider.create');
      if (!operation) throw new Error('no provider.create span under the active span');
      expect(recorder.childrenOf(operation).map((x) => x.name)).toEqual(
        expect.arrayContaining(['compute.instances.insert', 'compute.zoneOperations.wait']),
      );
      await p.delete(s.name);
    } finally {
      await recorder.stop();
    }
  });
});
