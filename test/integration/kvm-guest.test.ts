/**
 * The kvm backend with a real guest: libvirtd's qemu driver in a network namespace of the test's
 * own (test/support/qemu-host.ts) boots the Debian test image (scripts/guest-image.sh) with the
 * NoCloud seed the backend uploads; cloud-init configures tinyproxy with the proxy's credentials;
 * the relay finds the address, reads the guest's ready marker through the guest agent, probes
 * through the guest's TLS listener (stunnel, pinning the certificate the guest made), replaces it
 * when its qemu process is killed, and deletes every part of it.
 */
import { egressPolicySchema } from '../../shared/config/egress-policy.js';
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeBody } from '../../shared/bus/message.js';
import { instanceName } from '../../shared/domain/names.js';
import { runCheck, type CheckDeps } from '../../shared/reconcile/check.js';
import { handleRequest, type RequestDeps } from '../../shared/requests.js';
import { buildUserData } from '../../shared/providers/gcp/cloud-init.js';
import { fingerprintOf, TlsPinError } from '../../shared/tls/pinned.js';
import { kvmHostSchema } from '../../relay/backends/kvm/index.js';
import { pinnedCurlArgs, presentedCertificate } from '../support/pinned-proxy.js';
import { domainXml } from '../../relay/backends/kvm/domain-xml.js';
import { buildIso9660 } from '../../relay/backends/kvm/iso9660.js';
import { eventually } from '../support/eventually.js';
import { startQemuHost, type QemuHost } from '../support/qemu-host.js';
import { startRelayHarness, type RelayHarness } from '../support/relay-harness.js';

const run = promisify(execFile);
const RELAY = 'kvm-guest';
/** Boot to a serving proxy takes 30–55 s under TCG on 2 cores; a loaded CI machine gets room. */
const BOOT_MS = 240_000;

let host: QemuHost;
let h: RelayHarness;
let deps: CheckDeps;
let requests: RequestDeps;
const logLines: string[] = [];
let seq = 0;

const publish = (body: unknown) =>
  handleRequest(requests, decodeBody(`kg-${++seq}`, Date.now(), {}, JSON.stringify(body)));

/** Runs checks (as the kicks and sweeps would) until `until` holds of the proxy document. */
type ProxyDoc = NonNullable<Awaited<ReturnType<RelayHarness['proxies']['get']>>>['doc'] | undefined;
const settle = <T>(name: string, until: (doc: ProxyDoc) => T | undefined, ms = BOOT_MS): Promise<T> =>
  eventually(
    async () => {
      await runCheck(deps, { names: [name] });
      const doc = (await h.proxies.get(name))?.doc;
      const value = until(doc);
      if (value === undefined) throw new Error(`phase ${doc?.status.phase}: ${JSON.stringify(doc?.status.conditions)}`);
      return value;
    },
    ms,
    1000,
  );

/**
 * Stand-ins on the namespace (the guests' router): one public-looking address (TEST-NET-2) and the
 * metadata server's, with listeners on an allowed port (80) and on one outside the list (8081).
 * The libvirt host's own address on the NAT network (`<guestPrefix>.1`) answers on both too.
 */
const PUBLIC = '198.51.100.1';
const METADATA = '169.254.169.254';
const listeners: ChildProcess[] = [];
let listenerDir: string;

/**
 * The guests' egress policy: the default, plus the echo endpoint on the test host's veth address
 * (private, as a lab's echo would be) as an exception.
 */
const egress = () => egressPolicySchema.parse({ allow: [{ cidr: `${host.hostIp}/32`, ports: [[1024, 65535]] }] });

/** One request through a guest's proxy, plain or tunnelled (`-p`), that never throws: status 0 when curl failed. */
async function attempt(address: string, auth: string, target: string, tunnel: boolean) {
  const args = ['-sS', '--max-time', '15', '-x', `http://${auth}@${address}`, ...(tunnel ? ['-p'] : [])];
  try {
    return await curlThrough(address, auth, target, args);
  } catch (err) {
    return { status: 0, body: String(err) };
  }
}

/**
 * Through the guest's proxy: the public stand-in on port 80 answers; the libvirt host's address
 * on the NAT network, the metadata address and a port outside the list are refused, plain and CONNECT.
 */
async function expectFenced(address: string, auth: string): Promise<void> {
  for (const tunnel of [false, true]) {
    const open = await attempt(address, auth, `http://${PUBLIC}/`, tunnel);
    expect(open.status, `${PUBLIC}:80 tunnel=${tunnel}: ${open.body}`).toBe(200);
    for (const refused of [`http://${host.guestPrefix}.1/`, `http://${METADATA}/`, `http://${PUBLIC}:8081/`]) {
      const answer = await attempt(address, auth, refused, tunnel);
      expect(answer.status, `${refused} tunnel=${tunnel}: ${answer.body}`).not.toBe(200);
      expect(answer.body).not.toContain('Directory listing');
    }
  }
}

/** curl through the proxy from this side of the namespace; returns the HTTP status and body. */
async function curlThrough(address: string, auth: string | undefined, target: string, args?: string[]) {
  const proxy = auth ? `http://${auth}@${address}` : `http://${address}`;
  const { stdout } = await run(
    'curl',
    [...(args ?? ['-sS', '--max-time', '10', '-x', proxy]), '-w', '\n%{http_code}', target],
    {
      encoding: 'utf8',
    },
  );
  const lines = stdout.trimEnd().split('\n');
  return { status: Number(lines.pop()), body: lines.join('\n') };
}

/**
 * curl through the guest's TLS listener at `ip:port` by an `https://` proxy URL, trusting only the
 * certificate whose fingerprint is `fingerprint` (test/support/pinned-proxy.ts).
 */
async function curlPinned(ip: string, port: number, fingerprint: string, auth: string, target: string) {
  const certificate = await presentedCertificate(ip, port, fingerprint);
  const pem = path.join(listenerDir, `${ip}-${port}.pem`);
  const pinned = await pinnedCurlArgs({ host: ip, port, auth }, certificate, pem);
  return curlThrough(`${ip}:${port}`, auth, target, ['-sS', '--max-time', '10', ...pinned]);
}

beforeAll(async () => {
  host = await startQemuHost();
  listenerDir = await mkdtemp(path.join(tmpdir(), 'kvm-fence-'));
  for (const address of [PUBLIC, METADATA])
    await run('ip', ['netns', 'exec', host.netns, 'ip', 'addr', 'add', `${address}/32`, 'dev', 'lo']);
  for (const port of ['80', '8081']) {
    // ip netns exec execs python: the child's pid is the listener's.
    const child = spawn(
      'ip',
      ['netns', 'exec', host.netns, 'python3', '-m', 'http.server', port, '--bind', '0.0.0.0'],
      {
        cwd: listenerDir,
        stdio: 'ignore',
      },
    );
    listeners.push(child);
  }
  await eventually(async () => {
    for (const port of ['80', '8081'])
      await run('ip', ['netns', 'exec', host.netns, 'curl', '-sf', '-o', '/dev/null', `http://${PUBLIC}:${port}/`]);
  }, 10_000);
  h = await startRelayHarness(
    RELAY,
    [24300, 24309],
    {
      providers: [{ name: 'lab', type: 'kvm', relay: RELAY, options: { heartbeatTimeoutSeconds: 60 } }],
      unhealthyAfter: 2,
    },
    {
      echoHost: host.hostIp,
      onLog: (line) => logLines.push(line),
      backends: (stateDir) => [
        {
          provider: 'lab',
          type: 'kvm',
          stateDir,
          hosts: { h1: { ...host.hostConfig(), vcpus: 2, memoryMiB: 768 } },
          egress: egress(),
          connectTimeoutSeconds: 5,
          callTimeoutSeconds: 30,
        },
      ],
    },
  );
  deps = {
    config: h.config,
    proxies: h.proxies,
    registry: h.registry,
    logger: h.logger,
    bus: h.bus,
    rolloutCounts: (p) => h.proxies.rolloutCounts(p),
  };
  requests = { proxies: h.proxies, bus: h.bus, logger: h.logger, maxEvents: 50 };
}, 120_000);

afterAll(async () => {
  for (const child of listeners) child.kill('SIGKILL');
  if (listenerDir) await rm(listenerDir, { recursive: true, force: true });
  await h?.close();
  await host?.close();
}, 120_000);

describe("kvm guest: a real cloud-init guest under libvirt's qemu driver", () => {
  const proxy = 'guest-1';
  let instance: string;

  it(
    'a published Proxy becomes Ready through the guest: seed and overlay in the pool, lease, agent, credentials',
    async () => {
      instance = instanceName(h.config.installationId, proxy);
      await publish({
        apiVersion: 'egress.dev/v1',
        kind: 'Proxy',
        action: 'apply',
        metadata: { name: proxy },
        spec: { provider: 'lab', placement: { host: 'h1' } },
      });
      const started = Date.now();
      const doc = await settle(proxy, (d) => (d?.status.phase === 'Ready' ? d : undefined)).catch(async (err) => {
        throw new Error(`${String(err)}\nserial console:\n${(await host.serialLog(instance)).slice(-4000)}`);
      });
      console.log(`kvm guest: publish → Ready in ${((Date.now() - started) / 1000).toFixed(1)} s`);

      expect(await host.volumes()).toEqual(expect.arrayContaining([`${instance}.qcow2`, `${instance}-seed.iso`]));
      expect(await host.virsh('domstate', instance)).toMatch(/running/);
      const qemu = await host.qemuPid(instance);
      expect((await run('ps', ['-o', 'comm=', '-p', String(qemu)], { encoding: 'utf8' })).stdout).toMatch(/qemu/);

      const address = doc.status.address ?? '';
      const ip = address.split(':')[0] ?? '';
      expect(ip.startsWith(`${host.guestPrefix}.`)).toBe(true);
      expect(await host.virsh('net-dhcp-leases', host.networkName)).toContain(ip);
      expect(await host.virsh('domifaddr', instance, '--source', 'agent')).toContain(ip);
      // The readiness came from the guest's marker, read through the agent, before the proxy was Ready.
      expect(logLines.some((l) => l.includes('guest says its proxy serves') && l.includes(instance))).toBe(true);

      const credentials = await h.proxies.credentials(proxy);
      if (!credentials) throw new Error('no credentials');
      const ok = await curlThrough(address, `${credentials.username}:${credentials.password}`, h.echo.url);
      expect(ok.status).toBe(200);
      expect(JSON.parse(ok.body)).toEqual({ ip });
      expect((await curlThrough(address, undefined, h.echo.url)).status).toBe(407);
      // tinyproxy answers wrong credentials with 401, not 407 (RFC 9110 §15.5.8 wants 407): refused either way.
      expect((await curlThrough(address, `${credentials.username}:wrong`, h.echo.url)).status).toBe(401);

      // The TLS listener: its certificate, made in the guest, pinned by the relay's first probe
      // through it; the proxy's credentials travel inside TLS only.
      const { tlsPort, tlsFingerprint } = doc.status.instance ?? {};
      expect(tlsPort).toBe(Number(address.split(':')[1]) + 1);
      expect(tlsFingerprint).toMatch(/^[0-9a-f]{64}$/);
      expect(doc.status.health?.tlsFingerprint).toBe(tlsFingerprint);
      expect(doc.status.conditions.find((c) => c.type === 'TlsPinned')).toMatchObject({ status: 'True' });
      const pin = tlsFingerprint ?? '';
      const secret = `${credentials.username}:${credentials.password}`;
      const overTls = await curlPinned(ip, tlsPort ?? 0, pin, secret, h.echo.url);
      expect(overTls.status).toBe(200);
      expect(JSON.parse(overTls.body)).toEqual({ ip });
      expect((await curlPinned(ip, tlsPort ?? 0, pin, `${credentials.username}:wrong`, h.echo.url)).status).toBe(401);
      // Another pin: the connection is refused before anything is sent on it.
      await expect(presentedCertificate(ip, tlsPort ?? 0, 'ab'.repeat(32))).rejects.toThrow(TlsPinError);
    },
    BOOT_MS + 60_000,
  );

  describe("fence: the guest's proxy reaches the Internet's stand-in only", () => {
    it('the libvirt host on the NAT network, the metadata address and an unlisted port are refused, plain and CONNECT', async () => {
      const doc = (await h.proxies.get(proxy))?.doc;
      const credentials = await h.proxies.credentials(proxy);
      if (!doc?.status.address || !credentials) throw new Error('the guest is not Ready');
      await expectFenced(doc.status.address, `${credentials.username}:${credentials.password}`);
    }, 120_000);
  });

  it(
    "the guest's qemu process killed → the proxy is replaced by a new guest",
    async () => {
      const before = (await h.proxies.get(proxy))?.doc;
      const createdAt = before?.status.instance?.createdAt;
      const qemu = await host.qemuPid(instance);
      process.kill(qemu, 'SIGKILL');
      const doc = await settle(proxy, (d) =>
        d?.status.phase === 'Ready' && d.status.instance?.createdAt !== createdAt ? d : undefined,
      );
      expect(await host.qemuPid(instance)).not.toBe(qemu);
      const reasons = (await h.proxies.events(proxy)).map((e) => e.reason);
      expect(reasons.some((r) => r.startsWith('Replac'))).toBe(true);
      const credentials = await h.proxies.credentials(proxy);
      const ok = await curlThrough(
        doc.status.address ?? '',
        `${credentials?.username}:${credentials?.password}`,
        h.echo.url,
      );
      expect(ok.status).toBe(200);
    },
    BOOT_MS + 60_000,
  );

  it('a delete removes the domain, its overlay and its seed', async () => {
    await publish({ apiVersion: 'egress.dev/v1', kind: 'Proxy', action: 'delete', metadata: { name: proxy } });
    await settle(proxy, (d) => (d === undefined ? true : undefined), 60_000);
    expect((await host.virsh('list', '--all', '--name')).split('\n').map((l) => l.trim())).not.toContain(instance);
    const volumes = await host.volumes();
    expect(volumes).not.toContain(`${instance}.qcow2`);
    expect(volumes).not.toContain(`${instance}-seed.iso`);
  }, 90_000);
});

describe('kvm guest: the gcp user-data, run by real cloud-init in the same image', () => {
  it(
    'boots from a NoCloud seed carrying it and serves tinyproxy with the credentials it names',
    async () => {
      // The guest attribute step (a PUT to metadata.google.internal) has no metadata server here and fails
      // in the guest without stopping the rest; the provider's own tests cover it against the fake GCE.
      const name = 'gcp-userdata-1';
      const credentials = { username: 'gcp-user', password: 'gcp-Pass.word-1' };
      const userData = buildUserData({ instance: name, proxy: 'gcp-1', port: 3128, credentials, egress: egress() });
      const poolDir = (await host.virsh('pool-dumpxml', host.poolName)).match(/<path>([^<]+)<\/path>/)?.[1] ?? '';
      const seed = buildIso9660({
        volumeId: 'cidata',
        date: new Date(),
        files: [
          { name: 'user-data', data: Buffer.from(userData) },
          { name: 'meta-data', data: Buffer.from(`instance-id: ${name}\nlocal-hostname: ${name}\n`) },
        ],
      });
      await writeFile(path.join(poolDir, `${name}-seed.iso`), seed);
      await run('qemu-img', [
        'create',
        '-q',
        '-f',
        'qcow2',
        '-F',
        'qcow2',
        '-b',
        path.join(poolDir, 'base.qcow2'),
        path.join(poolDir, `${name}.qcow2`),
      ]);
      await host.virsh('pool-refresh', host.poolName);
      const config = kvmHostSchema.parse({ ...host.hostConfig(), vcpus: 1, memoryMiB: 512 });
      const metadata = {
        installationId: 'gcp-userdata',
        proxy: 'gcp-1',
        specHash: 'x',
        createdAt: Date.now(),
        port: 3128,
      };
      const xmlFile = path.join(poolDir, `${name}.xml`);
      await writeFile(xmlFile, domainXml({ name, host: config, vcpus: 2, memoryMiB: 768, metadata }));
      await host.virsh('define', xmlFile);
      try {
        await host.virsh('start', name);
        const started = Date.now();
        const status = await eventually(
          async () => {
            const ip = /(\d+\.\d+\.\d+\.\d+)\/\d+/.exec(await host.virsh('domifaddr', name, '--source', 'lease'))?.[1];
            if (!ip) throw new Error('no DHCP lease yet');
            const ok = await curlThrough(`${ip}:3128`, `${credentials.username}:${credentials.password}`, h.echo.url);
            if (ok.status !== 200) throw new Error(`through ${ip}:3128: ${ok.status}`);
            return { ip, ok };
          },
          BOOT_MS,
          2000,
        ).catch(async (err) => {
          throw new Error(`${String(err)}\nserial console:\n${(await host.serialLog(name)).slice(-4000)}`);
        });
        console.log(`kvm guest: gcp user-data serving after ${((Date.now() - started) / 1000).toFixed(1)} s`);
        // The echo endpoint saw the guest as the caller: the request left through the guest's proxy.
        expect(JSON.parse(status.ok.body)).toEqual({ ip: status.ip });
        expect((await curlThrough(`${status.ip}:3128`, undefined, h.echo.url)).status).toBe(407);
        // Its TLS listener on the next port serves the same proxy, behind a certificate of its own.
        // Learnt on first use here, as the probe does, then pinned. The user-data starts it after
        // tinyproxy (its certificate is made first), as the VM's readiness unit knows: wait for it.
        const learnt = await eventually(
          async () => fingerprintOf((await presentedCertificate(status.ip, 3129)).raw),
          60_000,
          1000,
        );
        const secret = `${credentials.username}:${credentials.password}`;
        const overTls = await curlPinned(status.ip, 3129, learnt, secret, h.echo.url);
        expect(overTls.status).toBe(200);
        expect(JSON.parse(overTls.body)).toEqual({ ip: status.ip });
        // fence: the same refusals as the kvm seed's guest.
        await expectFenced(`${status.ip}:3128`, `${credentials.username}:${credentials.password}`);
      } finally {
        await host.virsh('destroy', name).catch(() => undefined);
        await host.virsh('undefine', name);
      }
    },
    BOOT_MS + 60_000,
  );
});
