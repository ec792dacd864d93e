/**
 * The kvm relay backend against a real libvirtd: the test driver runs the domains (lifecycle,
 * metadata, the address path, state mapping), the storage driver holds real qcow2 overlays and the
 * uploaded seeds. Nothing of libvirt is mocked.
 */
import { DEFAULT_EGRESS_POLICY } from '../../shared/config/egress-policy.js';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NotFoundError, PermanentError, RetryableError } from '../../shared/errors.js';
import { createLogger } from '../../shared/logger.js';
import type { InstanceSpec } from '../../shared/providers/contract.js';
import type { RelayBackend } from '../../relay/backends/backend.js';
import { createKvmBackend } from '../../relay/backends/kvm/index.js';
import { HealthBook, probeRound } from '../../relay/probes.js';
import type { ProbeOptions } from '../../shared/probe/probe.js';
import { loopbackOnlyProbe } from '../support/loopback-probe.js';
import { METADATA_NS, parseMetadata } from '../../relay/backends/kvm/domain-xml.js';
import { buildSeed } from '../../relay/backends/kvm/seed.js';
import { kvmBackendSchema } from '../../relay/backends/kvm/index.js';
import { LibvirtConnectionLostError, MetadataType } from '../../relay/libvirt/index.js';
import { startKvmHost, type KvmHost } from '../support/kvm-host.js';
import { recordSpans } from '../support/span-recorder.js';
import { inSpan } from '../../shared/telemetry/spans.js';
import { startLibvirtProxy } from '../support/libvirt-proxy.js';
import { eventually } from '../support/eventually.js';
import { KEEPALIVE_PROGRAM } from '../../relay/libvirt/packet.js';

const logger = createLogger({ write: () => {}, level: 'ERROR' });
let seq = 0;
const spec = (over: Partial<InstanceSpec> = {}): InstanceSpec => {
  const proxy = `kb-${Date.now().toString(36).slice(-4)}${(seq++).toString(36)}`;
  return {
    name: `ep-${proxy}`,
    proxy,
    installationId: 'it',
    specHash: 'hash-1',
    port: 0,
    placement: { host: 'h1' },
    credentials: { username: 'u', password: `p-${proxy}` },
    ...over,
  };
};

function backendFor(
  host: KvmHost,
  stateDir: string,
  hosts: Record<string, unknown> = {},
  extra: Record<string, unknown> = {},
): RelayBackend {
  const config = kvmBackendSchema.parse({
    provider: 'lab',
    type: 'kvm',
    stateDir,
    hosts: { h1: host.hostConfig(), ...hosts },
    sizes: { big: { vcpus: 2, memoryMiB: 1024, diskGiB: 1 } },
    connectTimeoutSeconds: 1,
    callTimeoutSeconds: 5,
    ...extra,
  });
  return createKvmBackend({ config, installationId: 'it', logger });
}

/** A TCP server that accepts connections and never says a word: a host that does not answer. */
async function silentListener(): Promise<{ port: number; accepted: () => number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  let accepted = 0;
  const server = net.createServer((s) => {
    accepted++;
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    accepted: () => accepted,
    close: () =>
      new Promise((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe('libvirt client: kvm backend on a real libvirtd (test driver + storage driver)', () => {
  let host: KvmHost;
  let stateDir: string;
  let backend: RelayBackend;

  beforeAll(async () => {
    host = await startKvmHost();
    stateDir = await mkdtemp(path.join(tmpdir(), 'egress-kvm-'));
    backend = backendFor(host, stateDir);
  }, 60_000);
  afterAll(async () => {
    await backend?.close();
    await host?.close();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  const poolFile = (name: string) => path.join(host.daemon.poolDir, name);

  it('get, list and check run their libvirt calls in libvirt.<procedure> child spans', async () => {
    const s = spec();
    await backend.create(s);
    const recorder = recordSpans();
    try {
      for (const op of ['get', 'list', 'check'] as const) {
        await inSpan(`test.${op}`, {}, async () => {
          if (op === 'get') await backend.get(s.name);
          else if (op === 'list') await backend.list();
          else expect((await backend.check()).ok).toBe(true);
        });
      }
      const children = (op: string) =>
        new Set(recorder.childrenOf(recorder.named(`test.${op}`)[0]!).map((span) => span.name));
      expect([...children('get')]).toEqual(
        expect.arrayContaining(['libvirt.domainLookupByName', 'libvirt.domainGetMetadata', 'libvirt.domainGetState']),
      );
      expect([...children('list')]).toEqual(
        expect.arrayContaining([
          'libvirt.connectListAllDomains',
          'libvirt.domainGetMetadata',
          'libvirt.domainGetState',
        ]),
      );
      expect([...children('check')]).toEqual(
        expect.arrayContaining([
          'libvirt.connectGetLibVersion',
          'libvirt.storagePoolLookupByName',
          'libvirt.storagePoolGetInfo',
          'libvirt.storageVolLookupByName',
        ]),
      );
      expect(recorder.open()).toEqual([]);
    } finally {
      await recorder.stop();
      await backend.delete(s.name);
    }
  });

  it('create: a qcow2 overlay on the base image, the seed uploaded byte for byte, a running domain with our metadata', async () => {
    const s = spec({ port: 8888, placement: { host: 'h1', size: 'big' } });
    const created = await backend.create(s);
    expect(created).toMatchObject({
      name: s.name,
      proxy: s.proxy,
      installationId: 'it',
      specHash: 'hash-1',
      port: 8888,
    });
    expect(created.createdAt).toBeGreaterThan(0);

    // The overlay: a qcow2 file whose header names the base image as its backing file.
    const overlay = await readFile(poolFile(`${s.name}.qcow2`));
    expect(overlay.subarray(0, 4).toString('latin1')).toBe('QFI\xfb');
    const backingOffset = Number(overlay.readBigUInt64BE(8));
    const backing = overlay.subarray(backingOffset, backingOffset + overlay.readUInt32BE(16)).toString('utf8');
    expect(backing).toBe(poolFile('base.qcow2'));
    // The size asks for 1 GiB, more than the 64 MiB base: the overlay's virtual size is 1 GiB.
    expect(overlay.readBigUInt64BE(24)).toBe(1024n ** 3n);

    // The seed: exactly the image built from the instance's inputs (its createdAt is in the metadata).
    const expected = buildSeed({
      instance: s.name,
      proxy: s.proxy,
      port: 8888,
      credentials: s.credentials,
      egress: DEFAULT_EGRESS_POLICY,
      createdAt: created.createdAt,
    });
    expect((await readFile(poolFile(`${s.name}-seed.iso`))).equals(expected.image)).toBe(true);

    // The domain, read out of band: running, our metadata element in our namespace.
    const domain = await host.domains.lookupDomainByName(s.name);
    expect((await host.domains.getDomainState(domain)).state).toBe(1);
    const metadata = parseMetadata(await host.domains.getDomainMetadata(domain, MetadataType.ELEMENT, METADATA_NS));
    expect(metadata).toEqual({
      installationId: 'it',
      proxy: s.proxy,
      specHash: 'hash-1',
      createdAt: created.createdAt,
      port: 8888,
    });
    const xml = await host.domains.getDomainXml(domain);
    expect(xml).toContain("<vcpu placement='static'>2</vcpu>");
    expect(xml).toContain(`volume='${s.name}-seed.iso'`);

    // The relay keeps the credentials (mode 0600) for its probes.
    expect(await backend.credentials(s.name)).toEqual(s.credentials);
    expect((await stat(path.join(stateDir, 'kvm', 'lab', `${s.name}.json`))).mode & 0o777).toBe(0o600);
  });

  it('get: Running with the address from the DHCP leases, and the metadata', async () => {
    const s = spec();
    await backend.create(s);
    const got = await backend.get(s.name);
    expect(got).toMatchObject({ state: 'Running', port: 3128, proxy: s.proxy, specHash: s.specHash });
    // The test driver makes up 192.168.122.x addresses for every source; the lease is asked first.
    const domain = await host.domains.lookupDomainByName(s.name);
    const [lease] = await host.domains.getInterfaceAddresses(domain, 0);
    expect(got.ip).toBe(lease?.addrs[0]?.addr);
    expect(got.ip).toMatch(/^192\.168\.122\.\d+$/);
  });

  it('state mapping: paused stays Running (the probes judge it), destroyed is Stopped', async () => {
    const s = spec();
    await backend.create(s);
    await host.virsh('suspend', s.name);
    expect((await backend.get(s.name)).state).toBe('Running');
    await host.virsh('resume', s.name);
    await host.virsh('destroy', s.name);
    const stopped = await backend.get(s.name);
    expect(stopped.state).toBe('Stopped');
    expect(stopped.ip).toBe('');
  });

  it('a duplicate create adopts: same createdAt, a stopped domain is started again, no new volumes', async () => {
    const s = spec();
    const first = await backend.create(s);
    const seedBefore = await stat(poolFile(`${s.name}-seed.iso`));
    const again = await backend.create(s);
    expect(again.createdAt).toBe(first.createdAt);
    await host.virsh('destroy', s.name);
    const restarted = await backend.create(s);
    expect(restarted).toMatchObject({ state: 'Running', createdAt: first.createdAt });
    expect((await stat(poolFile(`${s.name}-seed.iso`))).ino).toBe(seedBefore.ino);
  });

  it('a domain of that name without our metadata is refused naming spec.name, and left alone', async () => {
    const s = spec();
    const xml = `<domain type='test'><name>${s.name}</name><memory>65536</memory><os><type>hvm</type></os></domain>`;
    await host.domains.defineDomain(xml);
    await expect(backend.create(s)).rejects.toMatchObject({ code: 'Permanent', field: 'spec.name' });
    await expect(backend.get(s.name)).rejects.toBeInstanceOf(NotFoundError);
    await backend.delete(s.name);
    expect((await host.domains.lookupDomainByName(s.name)).name).toBe(s.name);
    expect((await backend.list()).map((i) => i.name)).not.toContain(s.name);
  });

  it('delete: destroys, undefines and removes both volumes; again, and with the domain already gone, is fine', async () => {
    const s = spec();
    await backend.create(s);
    await backend.delete(s.name);
    await expect(backend.get(s.name)).rejects.toBeInstanceOf(NotFoundError);
    await expect(stat(poolFile(`${s.name}.qcow2`))).rejects.toThrow(/ENOENT/);
    await expect(stat(poolFile(`${s.name}-seed.iso`))).rejects.toThrow(/ENOENT/);
    expect(await backend.credentials(s.name)).toBeUndefined();
    await backend.delete(s.name);

    // The domain removed out of band: the volumes still go.
    const t = spec();
    await backend.create(t);
    await host.virsh('destroy', t.name);
    await host.virsh('undefine', t.name);
    await backend.delete(t.name);
    await expect(stat(poolFile(`${t.name}.qcow2`))).rejects.toThrow(/ENOENT/);
    await expect(stat(poolFile(`${t.name}-seed.iso`))).rejects.toThrow(/ENOENT/);
  });

  it('list: this installation’s domains only; foreign ones and other installations are ignored', async () => {
    const mine = spec();
    const theirs = spec({ installationId: 'other' });
    await Promise.all([backend.create(mine), backend.create(theirs)]);
    const names = (await backend.list()).map((i) => i.name);
    expect(names).toContain(mine.name);
    expect(names).not.toContain(theirs.name);
    expect(names).not.toContain('test'); // the test driver's own domain has no metadata
  });

  it('placement: an unknown host or size, or an unknown key, is refused naming the field', async () => {
    expect(() => backend.resolvePlacement({ host: 'nowhere' })).toThrow(/spec\.placement\.host/);
    expect(() => backend.resolvePlacement({ size: 'huge' })).toThrow(/spec\.placement\.size/);
    expect(() => backend.resolvePlacement({ zone: 'a' })).toThrow(/spec\.placement\.zone/);
    expect(backend.resolvePlacement({})).toEqual({ host: 'h1' });
    await expect(backend.create(spec({ placement: { host: 'nowhere' } }))).rejects.toMatchObject({
      code: 'Permanent',
      field: 'spec.placement.host',
    });
  });

  it('the relay probes Running kvm instances itself, through the proxy with the recorded credentials', async () => {
    const s = spec();
    const instance = await backend.create(s);
    const probed: ProbeOptions[] = [];
    const round = (b: RelayBackend, book: HealthBook) =>
      probeRound({
        backends: new Map([['lab', b]]),
        book,
        echoUrl: 'http://192.0.2.1/',
        timeoutMs: 500,
        logger,
        probe: async (opts) => {
          probed.push(opts);
          return loopbackOnlyProbe(opts);
        },
      });
    // The test driver's guest does not exist (and its address is not ours to send to): the probe
    // fails. Within the startup grace (default 600 s) a guest that never answered is still
    // installing its proxy: the failure is not recorded, so the proxy stays Provisioning.
    const booting = new HealthBook();
    await round(backend, booting);
    expect(probed.find((p) => p.host === instance.ip)).toMatchObject({ port: 3128, ...s.credentials });
    expect(booting.get('lab', instance)).toBeUndefined();
    // Without a grace the failure counts.
    const impatient = backendFor(host, stateDir, {}, { startupGraceSeconds: 0 });
    try {
      const book = new HealthBook();
      await round(impatient, book);
      expect(book.get('lab', instance)).toMatchObject({ ok: false, consecutiveFailures: 1 });
    } finally {
      await impatient.close();
    }
  });

  it('check: per host, the daemon answers and the pool is active with the base image', async () => {
    const health = await backend.check();
    expect(health.ok).toBe(true);
    expect(health.detail?.['h1']?.ok).toBe(true);
    const noPool = backendFor(host, stateDir, { h2: { ...host.hostConfig(), pool: 'no-such-pool' } });
    try {
      const h = await noPool.check();
      expect(h.ok).toBe(false);
      expect(h.detail?.['h1']?.ok).toBe(true);
      expect(h.detail?.['h2']?.ok).toBe(false);
      expect(h.detail?.['h2']?.message).toMatch(/no-such-pool/);
    } finally {
      await noPool.close();
    }
  });
});

describe('libvirt client: kvm backend connections (drops, silent hosts)', () => {
  let host: KvmHost;
  let stateDir: string;

  beforeAll(async () => {
    host = await startKvmHost();
    stateDir = await mkdtemp(path.join(tmpdir(), 'egress-kvm-conn-'));
  }, 60_000);
  afterAll(async () => {
    await host?.close();
    if (stateDir) await rm(stateDir, { recursive: true, force: true });
  });

  it('a dropped connection fails the call with a typed error; the next call dials again', async () => {
    const link = await startLibvirtProxy(host.daemon.tcpPort);
    const backend = backendFor(host, stateDir, {
      h1: { ...host.hostConfig(), uri: `test+tcp://127.0.0.1:${link.port}/default` },
    });
    try {
      const s = spec();
      await backend.create(s);
      expect((await backend.get(s.name)).state).toBe('Running');
      // Replies held back, so the calls are in flight on the connection when it drops.
      link.hold();
      const sent = link.seen.length;
      const inFlight = Promise.allSettled(Array.from({ length: 5 }, () => backend.get(s.name)));
      const calls = () => link.seen.slice(sent).filter((p) => p.direction === 'up' && p.program !== KEEPALIVE_PROGRAM);
      await eventually(
        () => expect(calls().length, 'calls sent while replies are held').toBeGreaterThanOrEqual(5),
        5000,
        10,
      );
      link.cut();
      link.release(); // new connections pass again
      const results = await inFlight;
      const failures = results.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
      expect(failures).toHaveLength(5);
      for (const err of failures) {
        expect(err).toBeInstanceOf(RetryableError);
        expect((err as RetryableError).cause).toBeInstanceOf(LibvirtConnectionLostError);
      }
      // The pool dials again: the same domain (the daemon kept it) is observed through a new connection.
      expect((await backend.get(s.name)).state).toBe('Running');
      await backend.delete(s.name);
    } finally {
      await backend.close();
      await link.close();
    }
  });

  /** Runs `fn` with a backend whose second host, h2, is a TCP listener that never answers. */
  async function withSilentH2(fn: (backend: RelayBackend, accepted: () => number) => Promise<void>): Promise<void> {
    const silent = await silentListener();
    const backend = backendFor(
      host,
      stateDir,
      { h2: { ...host.hostConfig(), uri: `test+tcp://127.0.0.1:${silent.port}/default` } },
      { connectTimeoutSeconds: 2 },
    );
    try {
      await fn(backend, silent.accepted);
    } finally {
      await backend.close();
      await silent.close();
    }
  }

  it('a host that does not answer times out (one dial for all callers) without blocking the other host', () =>
    withSilentH2(async (backend, accepted) => {
      const started = Date.now();
      let silentMs: number | undefined;
      const onSilent = Promise.allSettled(
        Array.from({ length: 5 }, () => backend.create(spec({ placement: { host: 'h2' } }))),
      ).then((results) => {
        silentMs = Date.now() - started;
        return results;
      });
      const created = await backend.create(spec());
      expect(created.state).toBe('Running');
      // h1 answered while h2's dial was still waiting for its 2 s timeout.
      expect(silentMs).toBeUndefined();
      const failed = await onSilent;
      expect(silentMs).toBeGreaterThanOrEqual(1900);
      expect(silentMs).toBeLessThan(5000);
      for (const r of failed) {
        expect(r.status).toBe('rejected');
        if (r.status === 'rejected') {
          expect(r.reason).toBeInstanceOf(RetryableError);
          expect(String(r.reason)).toMatch(/host h2/);
        }
      }
      expect(accepted()).toBe(1);
      const health = await backend.check();
      expect(health.detail?.['h1']?.ok).toBe(true);
      expect(health.detail?.['h2']?.ok).toBe(false);
      await expect(backend.list()).rejects.toThrow(/listing is incomplete: h2/);
      expect((await backend.get(created.name)).state).toBe('Running');
      await backend.delete(created.name);
    }));

  it('an instance name that is not ours anywhere is NotFound only when every host answered', () =>
    withSilentH2(async (backend) => {
      const alone = backendFor(host, stateDir);
      try {
        await expect(backend.get('ep-nowhere')).rejects.toBeInstanceOf(RetryableError);
        await expect(alone.get('ep-nowhere')).rejects.toBeInstanceOf(NotFoundError);
        await expect(backend.create(spec({ placement: {} }))).rejects.toBeInstanceOf(PermanentError);
      } finally {
        await alone.close();
      }
    }));
});
