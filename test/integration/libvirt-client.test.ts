// The libvirt client against a real libvirtd (test driver): lifecycle, metadata, addresses, pipelining, deadlines, drops, keepalive.
import { execFile } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AddressSource,
  AddressType,
  connect,
  DomainState,
  ErrorCode,
  LibvirtCancelledError,
  LibvirtConnectionClosedError,
  LibvirtConnectionLostError,
  LibvirtError,
  type LibvirtConnection,
  LibvirtTimeoutError,
  ListDomainsFlags,
  MetadataType,
} from '../../relay/libvirt/index.js';
import { KEEPALIVE_PING, KEEPALIVE_PONG, KEEPALIVE_PROGRAM, PacketType } from '../../relay/libvirt/packet.js';
import { Proc } from '../../relay/libvirt/procedures.js';
import { eventually } from '../support/eventually.js';
import { startLibvirtProxy, type LibvirtProxy } from '../support/libvirt-proxy.js';
import { type Libvirtd, startLibvirtd } from '../support/libvirtd.js';
import { rejection } from '../support/rejection.js';
import { stopProcess } from '../support/stopped-process.js';

const NS = 'https://egress-fleet.dev/xmlns/test';

const domainXml = (name: string, mac: string): string => `<domain type='test'>
  <name>${name}</name>
  <memory unit='MiB'>64</memory>
  <os><type arch='x86_64'>hvm</type></os>
  <devices><interface type='network'><mac address='${mac}'/><source network='default'/></interface></devices>
</domain>`;

let daemon: Libvirtd;
/** Held for the whole file: the test driver keeps its state only while a connection is open. */
let conn: LibvirtConnection;

beforeAll(async () => {
  // Daemon pings every second and drops a client after 3 unanswered: the idle test below relies on it.
  daemon = await startLibvirtd({ keepaliveIntervalS: 1, keepaliveCount: 3 });
  conn = await connect(daemon.testUri);
});

afterAll(async () => {
  await conn?.close();
  await daemon?.stop();
});

describe('libvirt client: test driver', () => {
  it('reports the hostname and the library version of the daemon', async () => {
    const { stdout } = await promisify(execFile)('libvirtd', ['--version']);
    const [major = 0, minor = 0, release = 0] = (/(\d+)\.(\d+)\.(\d+)/.exec(stdout) ?? []).slice(1).map(Number);
    expect(await conn.getLibVersion()).toBe(major * 1_000_000 + minor * 1_000 + release);
    expect(await conn.getHostname()).toMatch(/\S/);
  });

  it('defines, starts, inspects, stops and undefines a domain, with typed error codes on the way', async () => {
    const defined = await conn.defineDomain(domainXml('life', '52:54:00:aa:bb:01'));
    expect(defined).toMatchObject({ name: 'life', id: -1 });
    expect(defined.uuid).toHaveLength(16);
    expect(await conn.lookupDomainByName('life')).toEqual(defined);
    expect((await conn.listAllDomains(ListDomainsFlags.INACTIVE)).map((d) => d.name)).toContain('life');
    expect(await conn.getDomainState(defined)).toMatchObject({ state: DomainState.SHUTOFF });

    const started = await conn.startDomain(defined);
    expect(started.id).toBeGreaterThan(0);
    expect(await conn.getDomainState(started)).toMatchObject({ state: DomainState.RUNNING });
    expect((await conn.listAllDomains(ListDomainsFlags.ACTIVE)).map((d) => d.name)).toContain('life');
    expect(await conn.getDomainXml(started)).toContain('<name>life</name>');

    const noMetadata = await rejection(conn.getDomainMetadata(started, MetadataType.ELEMENT, NS));
    expect(noMetadata).toBeInstanceOf(LibvirtError);
    expect(noMetadata).toMatchObject({ code: ErrorCode.NO_DOMAIN_METADATA, procedure: 'DOMAIN_GET_METADATA' });
    const element = '<proxy installation="inst-1" name="p-1" specHash="abc"/>';
    await conn.setDomainMetadata(started, { type: MetadataType.ELEMENT, metadata: element, key: 'ef', uri: NS });
    expect(await conn.getDomainMetadata(started, MetadataType.ELEMENT, NS)).toBe(element);
    expect(await conn.getDomainXml(started)).toContain(NS);
    await conn.setDomainMetadata(started, { type: MetadataType.TITLE, metadata: 'a title' });
    expect(await conn.getDomainMetadata(started, MetadataType.TITLE)).toBe('a title');
    await conn.setDomainMetadata(started, { type: MetadataType.ELEMENT, metadata: undefined, key: 'ef', uri: NS });
    expect(await rejection(conn.getDomainMetadata(started, MetadataType.ELEMENT, NS))).toMatchObject({
      code: ErrorCode.NO_DOMAIN_METADATA,
    });

    await conn.destroyDomain(started);
    expect(await conn.getDomainState(started)).toMatchObject({ state: DomainState.SHUTOFF });
    expect(await rejection(conn.destroyDomain(started))).toMatchObject({ code: ErrorCode.OPERATION_INVALID });
    await conn.undefineDomain(started);
    expect(await rejection(conn.lookupDomainByName('life'))).toMatchObject({ code: ErrorCode.NO_DOMAIN });
    expect(await rejection(conn.getDomainState(started))).toMatchObject({ code: ErrorCode.NO_DOMAIN });
  });

  it('reads interface addresses from leases, ARP and the agent', async () => {
    const dom = await conn.startDomain(await conn.defineDomain(domainXml('addr', '52:54:00:aa:bb:02')));
    for (const source of [AddressSource.LEASE, AddressSource.ARP, AddressSource.AGENT]) {
      const interfaces = await conn.getInterfaceAddresses(dom, source);
      const nic = interfaces.find((i) => i.hwaddr === '52:54:00:aa:bb:02');
      expect(nic?.addrs[0]).toMatchObject({ type: AddressType.IPV4, prefix: expect.any(Number) as number });
      expect(nic?.addrs[0]?.addr).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    }
    await conn.destroyDomain(dom);
    await conn.undefineDomain(dom);
  });

  it('rejects a missing domain with NO_DOMAIN (42), a LibvirtError', async () => {
    const error = await rejection(conn.lookupDomainByName('no-such-domain'));
    expect(error).toBeInstanceOf(LibvirtError);
    expect(error).toMatchObject({ code: 42, procedure: 'DOMAIN_LOOKUP_BY_NAME' });
  });
});

describe('libvirt client: pipelining and deadlines', () => {
  let proxy: LibvirtProxy;
  let viaProxy: LibvirtConnection;

  beforeAll(async () => {
    proxy = await startLibvirtProxy(daemon.tcpPort);
    viaProxy = await connect(`test+tcp://127.0.0.1:${proxy.port}/default`);
  });

  afterAll(async () => {
    await viaProxy?.close();
    await proxy?.close();
  });

  it('keeps 500 getState calls in flight on one connection and matches every reply', async () => {
    const dom = await viaProxy.lookupDomainByName('test');
    proxy.seen.length = 0;
    proxy.hold();
    const calls = Array.from({ length: 500 }, () => viaProxy.getDomainState(dom));
    // All 500 calls reach the daemon before any reply is let through: they are pipelined, not sequential.
    await expect.poll(() => proxy.seen.filter((p) => p.procedure === Proc.DOMAIN_GET_STATE).length).toBe(500);
    proxy.release();
    const states = await Promise.all(calls);
    expect(states.every((s) => s.state === DomainState.RUNNING)).toBe(true);
    const serials = proxy.seen.filter((p) => p.type === PacketType.CALL).map((p) => p.serial);
    expect(new Set(serials).size).toBe(500);
  });

  it('times a call out after its deadline, drops the late reply, and stays usable', async () => {
    const dom = await viaProxy.lookupDomainByName('test');
    proxy.hold();
    const started = Date.now();
    const error = await rejection(viaProxy.getHostname({ timeoutMs: 200 }));
    expect(error).toBeInstanceOf(LibvirtTimeoutError);
    expect(Date.now() - started).toBeLessThan(2_000);
    const next = viaProxy.getDomainState(dom);
    proxy.release();
    expect(await next).toMatchObject({ state: DomainState.RUNNING });
    expect(viaProxy.closed).toBe(false);
  });

  it('cancels a call through its AbortSignal', async () => {
    const controller = new AbortController();
    proxy.hold();
    const call = viaProxy.getHostname({ signal: controller.signal });
    controller.abort(new Error('caller gave up'));
    const error = await rejection(call);
    expect(error).toBeInstanceOf(LibvirtCancelledError);
    expect((error as Error).cause).toMatchObject({ message: 'caller gave up' });
    expect(await rejection(viaProxy.getHostname({ signal: controller.signal }))).toBeInstanceOf(LibvirtCancelledError);
    proxy.release();
    expect(await viaProxy.getHostname()).toMatch(/\S/);
  });
});

describe('libvirt client: connection loss', () => {
  it('rejects every call in flight with the typed error when the connection drops, and says so once', async () => {
    const proxy = await startLibvirtProxy(daemon.tcpPort);
    const dropped = await connect(`test+tcp://127.0.0.1:${proxy.port}/default`);
    const reasons: unknown[] = [];
    dropped.onClose((reason) => reasons.push(reason));
    const dom = await dropped.lookupDomainByName('test');
    proxy.hold();
    const calls = Array.from({ length: 50 }, () => dropped.getDomainState(dom));
    await expect.poll(() => proxy.seen.filter((p) => p.procedure === Proc.DOMAIN_GET_STATE).length).toBe(50);
    proxy.cut();
    const errors = await Promise.all(calls.map(rejection));
    expect(errors.every((e) => e instanceof LibvirtConnectionLostError)).toBe(true);
    expect(dropped.closed).toBe(true);
    expect(await rejection(dropped.getHostname())).toBeInstanceOf(LibvirtConnectionLostError);
    await dropped.close();
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toBeInstanceOf(LibvirtConnectionLostError);
    await proxy.close();
  });

  it('fails calls in flight when the daemon itself is killed', async () => {
    const doomed = await startLibvirtd();
    const victim = await connect(doomed.testUri);
    const dom = await victim.lookupDomainByName('test');
    const closed = new Promise((resolve) => victim.onClose(resolve));
    // Frozen first, so none of the calls can be answered before the kill lands.
    await stopProcess(doomed.pid);
    const calls = Array.from({ length: 200 }, () =>
      victim.getDomainState(dom).then(
        () => 'ok',
        (e: unknown) => e,
      ),
    );
    process.kill(doomed.pid, 'SIGKILL');
    const outcomes = await Promise.all(calls);
    expect(outcomes.filter((o) => !(o instanceof LibvirtConnectionLostError))).toEqual([]);
    expect(await closed).toBeInstanceOf(LibvirtConnectionLostError);
    await doomed.stop();
  });

  it('close() ends the connection: later calls reject with the closed error and listeners get no reason', async () => {
    const short = await connect(daemon.testUri);
    const reasons: unknown[] = [];
    short.onClose((reason) => reasons.push(reason));
    await short.close();
    await short.close();
    expect(await rejection(short.getHostname())).toBeInstanceOf(LibvirtConnectionClosedError);
    expect(reasons).toEqual([undefined]);
  });
});

describe('libvirt client: unresponsive hosts and keepalive', () => {
  let silent: Server;
  let silentPort: number;
  const accepted: Socket[] = [];

  beforeAll(async () => {
    // Accepts TCP connections and never sends a byte: a hung host.
    silent = createServer((socket) => void accepted.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    silentPort = (silent.address() as { port: number }).port;
  });

  afterAll(async () => {
    for (const socket of accepted) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
  });

  it('gives up dialling a host that never answers within the timeout, without blocking another connection', async () => {
    const started = Date.now();
    const dial = rejection(connect(`test+tcp://127.0.0.1:${silentPort}/default`, { timeoutMs: 500 }));
    const dom = await conn.lookupDomainByName('test');
    const meanwhile = await Promise.all(Array.from({ length: 20 }, () => conn.getDomainState(dom)));
    const answeredAfter = Date.now() - started;
    const error = await dial;
    expect(error).toBeInstanceOf(LibvirtTimeoutError);
    expect(meanwhile).toHaveLength(20);
    expect(answeredAfter).toBeLessThan(500);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('answers the daemon’s pings, so an idle connection outlives the daemon’s keepalive deadline', async () => {
    const proxy = await startLibvirtProxy(daemon.tcpPort);
    // Our own pings are far apart, so every keepalive packet here is the daemon's ping or our pong.
    const idle = await connect(`test+tcp://127.0.0.1:${proxy.port}/default`, { keepalive: { intervalMs: 60_000 } });
    const dom = await idle.lookupDomainByName('test');
    // keepalive_interval 1 s × count 3: a client that did not answer would be dropped after ~4 s
    // and 3 unanswered pings; a fifth ping comes only to a client that answers them.
    const keepalive = () => proxy.seen.filter((p) => p.program === KEEPALIVE_PROGRAM);
    const daemonPings = () => keepalive().filter((p) => p.direction === 'down' && p.procedure === KEEPALIVE_PING);
    await eventually(
      () => expect(daemonPings().length, 'pings from the daemon on the idle connection').toBeGreaterThanOrEqual(5),
      10_000,
    );
    expect(keepalive().some((p) => p.direction === 'down' && p.procedure === KEEPALIVE_PING)).toBe(true);
    expect(keepalive().some((p) => p.direction === 'up' && p.procedure === KEEPALIVE_PONG)).toBe(true);
    expect(keepalive().some((p) => p.direction === 'up' && p.procedure === KEEPALIVE_PING)).toBe(false);
    expect(await idle.getDomainState(dom)).toMatchObject({ state: DomainState.RUNNING });
    await idle.close();
    await proxy.close();
  });

  it('pings an idle daemon itself and drops the connection when the pongs stop', async () => {
    const proxy = await startLibvirtProxy(daemon.tcpPort);
    const pinging = await connect(`test+tcp://127.0.0.1:${proxy.port}/default`, {
      keepalive: { intervalMs: 100, count: 3 },
    });
    await expect
      .poll(() => proxy.seen.some((p) => p.direction === 'down' && p.procedure === KEEPALIVE_PONG))
      .toBe(true);
    expect(proxy.seen.some((p) => p.direction === 'up' && p.procedure === KEEPALIVE_PING)).toBe(true);
    const lost = new Promise((resolve) => pinging.onClose(resolve));
    proxy.hold();
    const heldAt = Date.now();
    const pending = rejection(pinging.getHostname({ timeoutMs: 10_000 }));
    expect(await lost).toBeInstanceOf(LibvirtConnectionLostError);
    expect(Date.now() - heldAt).toBeLessThan(2_000);
    expect(await pending).toBeInstanceOf(LibvirtConnectionLostError);
    await proxy.close();
  });
});
