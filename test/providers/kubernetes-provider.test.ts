/**
 * The `kubernetes` provider's own behaviour against the fake API: error mapping, placement on real
 * scheduling rules, cluster access (kubeconfig, GKE token, several clusters), and tracing.
 */
import { localEgressPolicy } from '../../shared/config/egress-policy.js';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { EgressError, PermanentError, RetryableError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import { probeThroughProxy } from '../../shared/probe/probe.js';
import type { InstanceSpec, Provider } from '../../shared/providers/contract.js';
import { createKubernetesProvider } from '../../shared/providers/kubernetes/index.js';
import { instrument } from '../../shared/providers/instrument.js';
import { startEchoServer, type EchoServer } from '../../shared/probe/echo-server.js';
import { startFakeKube, type FakeKube } from '../fakes/kube/index.js';
import { recordSpans } from '../support/span-recorder.js';
import { eventually } from '../support/eventually.js';
import { rejectionOf } from '../support/rejection.js';

const logger = createLogger({ write: () => undefined });
let fake: FakeKube;
let echo: EchoServer;
let n = 0;

const build = (options: Record<string, unknown>, name = 'k8s', installationId = 'it'): Provider =>
  instrument(
    createKubernetesProvider({
      // The fake pulls no image: the default (tag) image runs, as on a development cluster. The echo
      // endpoint is on loopback: the Pods' tinyproxy (ConnectPort) admits it only by policy.
      provider: {
        name,
        type: 'kubernetes',
        catalogue: {},
        options: { allowUnpinnedImage: true, ...options },
        rolloutBudget: 2,
        egress: localEgressPolicy([]),
      },
      path: 'config.providers.0',
      config: { installationId },
      logger,
    }),
    logger,
  );
const spec = (placement: Record<string, unknown> = {}, over: Partial<InstanceSpec> = {}): InstanceSpec => {
  const proxy = `kp-${Date.now().toString(36)}-${n++}`;
  return {
    name: `ep-${proxy}`,
    proxy,
    installationId: 'it',
    specHash: 'h1',
    port: 0,
    placement,
    credentials: { username: 'u', password: randomBytes(12).toString('base64url') },
    ...over,
  };
};
const failure = (p: Promise<unknown>) => rejectionOf(p, EgressError);

beforeAll(async () => {
  fake = await startFakeKube({
    namespaces: ['default', 'egress'],
    nodes: [
      { name: 'general' },
      {
        name: 'egress-1',
        labels: { pool: 'egress' },
        taints: [{ key: 'dedicated', value: 'egress', effect: 'NoSchedule' }],
      },
    ],
  });
  echo = await startEchoServer();
});
afterAll(async () => {
  await fake?.close();
  await echo?.close();
});

describe('kubernetes provider: errors by status and reason', () => {
  it('422 Invalid is a PermanentError naming the placement field, and the Secret is not left behind', async () => {
    const p = build(fake.access());
    const remove = fake.inject({ kind: 'invalid', verb: 'create', resource: 'pods', field: 'spec.nodeSelector' });
    const s = spec();
    const e = await failure(p.create(s)).finally(remove);
    expect(e).toBeInstanceOf(PermanentError);
    expect(e.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.nodeSelector' });
    expect(fake.secret('default', `${s.name}-proxy`)).toBeUndefined();
  });

  it('a namespace that does not exist is a PermanentError naming spec.placement.namespace', async () => {
    const p = build({ ...fake.access(), namespaces: ['missing'] });
    const e = await failure(p.create(spec({ namespace: 'missing' })));
    expect(e.toInfo()).toMatchObject({ code: 'Permanent', field: 'spec.placement.namespace' });
  });

  it('an unknown placement key is refused by resolvePlacement naming it, before any API call', () => {
    const p = build(fake.access());
    const before = fake.requests.length;
    expect(() => p.resolvePlacement({ zone: 'x' })).toThrow(/spec\.placement\.zone/);
    expect(() => p.resolvePlacement({ tolerations: ['a=b:Sometimes'] })).toThrow(/spec\.placement\.tolerations/);
    expect(() => p.resolvePlacement({ namespace: 'kube-system' })).toThrow(/spec\.placement\.namespace/);
    expect(p.resolvePlacement({})).toEqual({ namespace: 'default' });
    expect(fake.requests.length).toBe(before);
  });

  it('a placement beyond options.placement (hostNetwork, every taint, a node selector) is refused before any API call', async () => {
    const p = build(fake.access());
    const before = fake.requests.length;
    for (const [placement, field] of [
      [{ hostNetwork: true }, 'spec.placement.hostNetwork'],
      [{ tolerations: ['*'] }, 'spec.placement.tolerations'],
      [{ nodeSelector: { pool: 'egress' } }, 'spec.placement.nodeSelector'],
    ] as const) {
      expect(() => p.resolvePlacement(placement)).toThrow(expect.objectContaining({ code: 'Validation', field }));
      // create resolves again (a spec written before the bounds were narrowed): Permanent, nothing created.
      expect((await failure(p.create(spec(placement)))).toInfo()).toMatchObject({ code: 'Permanent', field });
    }
    expect(fake.requests.length).toBe(before);
  });

  it('5xx, 503 and a slow server are Retryable; NotFound is only said after a 404', async () => {
    const p = build({ ...fake.access(), requestTimeoutSeconds: 0.5 });
    let remove = fake.inject({ kind: 'serverError', verb: 'get', resource: 'pods', times: 1 });
    expect(await failure(p.get('ep-x')).finally(remove)).toBeInstanceOf(RetryableError);
    remove = fake.inject({ kind: 'unavailable', verb: 'get', resource: 'pods', times: 1 });
    const unavailable = await failure(p.get('ep-x')).finally(remove);
    expect(unavailable.toInfo()).toMatchObject({ code: 'Retryable', retryAfterMs: 1000 });
    remove = fake.inject({ kind: 'slow', verb: 'list', resource: 'pods', delayMs: 1500 });
    expect((await failure(p.list()).finally(remove)).message).toMatch(/timed out/);
    fake.setDown(true);
    const down = await failure(p.get('ep-x')).finally(() => fake.setDown(false));
    expect(down).toBeInstanceOf(RetryableError);
    expect((await failure(p.get('ep-x'))).code).toBe('NotFound');
  });
});

describe('kubernetes provider: placement on the scheduler’s rules', () => {
  /** What these tests place, allowed by the provider's options. */
  const placement = {
    allowHostNetwork: true,
    tolerations: ['dedicated=egress:NoSchedule'],
    nodeSelectors: { pool: ['egress', 'gpu'] },
  };

  it('hostNetwork: the instance IP is the node’s own, and the proxy answers there with its credentials', async () => {
    const p = build({ ...fake.access(), placement });
    const s = spec({ hostNetwork: true }, { port: 18_888 });
    await p.create(s);
    const i = await eventually(async () => {
      const got = await p.get(s.name);
      expect(got.state).toBe('Running');
      return got;
    });
    expect(i.ip).toBe(fake.pod('default', s.name)?.status.hostIP);
    expect(i.port).toBe(18_888);
    const probe = await probeThroughProxy({
      host: i.ip,
      port: i.port,
      ...s.credentials,
      echoUrl: echo.url,
      timeoutMs: 3000,
    });
    expect(probe.ok, probe.error).toBe(true);
    await p.delete(s.name);
  });

  it('past unschedulableSeconds, a node selector no node matches is Failed, Permanent on the selector', async () => {
    const p = build({ ...fake.access(), unschedulableSeconds: 0, placement });
    const s = spec({ nodeSelector: { pool: 'gpu' } });
    await p.create(s);
    const i = await eventually(async () => {
      const got = await p.get(s.name);
      expect(got.state).toBe('Failed');
      return got;
    });
    expect(i.error).toMatchObject({ code: 'Permanent', field: 'spec.placement.nodeSelector' });
    expect(i.error?.message).toMatch(/didn't match Pod's node affinity\/selector/);
    await p.delete(s.name);
  });

  it('tolerations let a Pod onto a tainted node; without them it cannot schedule there', async () => {
    const p = build({ ...fake.access(), unschedulableSeconds: 0, placement });
    const without = spec({ nodeSelector: { pool: 'egress' } });
    const tolerated = spec({ nodeSelector: { pool: 'egress' }, tolerations: ['dedicated=egress:NoSchedule'] });
    await Promise.all([p.create(without), p.create(tolerated)]);
    await eventually(async () => expect((await p.get(tolerated.name)).state).toBe('Running'));
    expect(fake.pod('default', tolerated.name)?.spec.nodeName).toBe('egress-1');
    await eventually(async () => expect((await p.get(without.name)).error?.message).toMatch(/untolerated taint/));
    expect((await p.get(without.name)).error).toMatchObject({ code: 'Permanent', field: 'spec.placement.tolerations' });
    await Promise.all([p.delete(without.name), p.delete(tolerated.name)]);
  });
});

describe('kubernetes provider: cluster access', () => {
  it('several clusters side by side: each provider talks to its own', async () => {
    const other = await startFakeKube();
    try {
      const [a, b] = [build(fake.access(), 'cluster-a'), build(other.access(), 'cluster-b')];
      const [sa, sb] = [spec(), spec()];
      await Promise.all([a.create(sa), b.create(sb)]);
      expect(fake.pod('default', sa.name)).toBeDefined();
      expect(other.pod('default', sb.name)).toBeDefined();
      expect(fake.pod('default', sb.name)).toBeUndefined();
      expect((await b.list()).map((i) => i.name)).toEqual([sb.name]);
      await expect(a.get(sb.name)).rejects.toMatchObject({ code: 'NotFound' });
      await Promise.all([a.delete(sa.name), b.delete(sb.name)]);
    } finally {
      await other.close();
    }
  });

  it('a kubeconfig file and context; an unknown context is named in the health message', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'egress-kubeconfig-'));
    const file = join(dir, 'config');
    writeFileSync(
      file,
      stringify({
        apiVersion: 'v1',
        kind: 'Config',
        clusters: [{ name: 'fake', cluster: { server: fake.url, 'insecure-skip-tls-verify': true } }],
        users: [{ name: 'functions', user: { token: fake.token } }],
        contexts: [{ name: 'fake', context: { cluster: 'fake', user: 'functions' } }],
        'current-context': 'fake',
      }),
    );
    expect(await build({ kubeconfig: file, context: 'fake' }).check?.()).toMatchObject({ ok: true });
    const wrong = await build({ kubeconfig: file, context: 'prod' }).check?.();
    expect(wrong?.ok).toBe(false);
    expect(wrong?.message).toContain('config.providers.0.options.context: no context "prod"');
  });

  it('GKE: an access token of the function’s identity from the metadata server', async () => {
    const asked: (string | undefined)[] = [];
    const metadata = createServer((req, res) => {
      asked.push(req.headers['metadata-flavor']?.toString());
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ access_token: fake.token, expires_in: 3599, token_type: 'Bearer' }));
    });
    await new Promise<void>((resolve) => metadata.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = metadata.address() as AddressInfo;
      const p = build({ gke: { server: fake.url, metadataUrl: `http://127.0.0.1:${port}/token` } });
      expect(await p.check?.()).toMatchObject({ ok: true });
      await p.list();
      expect(asked).toEqual(['Google']);
    } finally {
      metadata.close();
    }
  });
});

describe('kubernetes provider: tracing', () => {
  it('each API call gets a span named after it, and no span attribute carries a credential', async () => {
    const recorder = recordSpans();
    try {
      const p = build(fake.access());
      const s = spec();
      await p.create(s);
      await p.get(s.name);
      await p.delete(s.name);
      await p.check?.();
      const names = recorder.ofTracer('egress/kubernetes').map((x) => x.name);
      expect(names).toEqual(
        expect.arrayContaining([
          'kubernetes secrets.create',
          'kubernetes pods.create',
          'kubernetes pods.get',
          'kubernetes pods.delete',
          'kubernetes secrets.delete',
          'kubernetes selfsubjectaccessreviews.create',
        ]),
      );
      const create = recorder.spans().find((x) => x.name === 'kubernetes pods.create');
      expect(create?.attributes).toMatchObject({ 'k8s.namespace.name': 'default', 'http.response.status_code': 200 });
      expect(recorder.open()).toEqual([]);
      const everything = JSON.stringify(recorder.spans().map((x) => x.attributes));
      expect(everything).not.toContain(s.credentials.password);
      expect(everything).not.toContain(fake.token);
    } finally {
      await recorder.stop();
    }
  });
});
