/** State mapping and the order of address sources (leases, then ARP, then the guest agent). */
import { describe, expect, it } from 'vitest';
import {
  AddressSource,
  AddressType,
  DomainState,
  ErrorCode,
  LibvirtConnectionLostError,
  LibvirtError,
  type DomainInterface,
} from '../../libvirt/index.js';
import { domainXml, metadataElement, METADATA_NS, parseMetadata } from './domain-xml.js';
import { ADDRESS_SOURCES, firstAddress, instanceState } from './observe.js';

const iface = (addr: string, type: number = AddressType.IPV4): DomainInterface => ({
  name: 'vnet0',
  hwaddr: '52:54:00:00:00:01',
  addrs: [{ type, addr, prefix: 24 }],
});
const refused = (source: number) =>
  new LibvirtError({ code: ErrorCode.OPERATION_UNSUPPORTED, domain: 10, message: 'no', level: 2 }, `source ${source}`);

describe('instanceState', () => {
  it.each([
    [DomainState.RUNNING, true, 'Running'],
    [DomainState.RUNNING, false, 'Pending'],
    [DomainState.BLOCKED, true, 'Running'],
    [DomainState.PAUSED, true, 'Running'],
    [DomainState.PAUSED, false, 'Pending'],
    [DomainState.PMSUSPENDED, true, 'Running'],
    [DomainState.NOSTATE, false, 'Pending'],
    [DomainState.SHUTDOWN, true, 'Stopped'],
    [DomainState.SHUTOFF, false, 'Stopped'],
    [DomainState.CRASHED, false, 'Terminated'],
  ])('libvirt state %i (address known: %s) is %s', (state, hasAddress, expected) => {
    expect(instanceState(state, hasAddress)).toBe(expected);
  });
});

describe('firstAddress', () => {
  it('asks leases, then ARP, then the agent, and stops at the first IPv4 address', async () => {
    const asked: number[] = [];
    const answers = new Map<number, DomainInterface[]>([
      [AddressSource.LEASE, []],
      [AddressSource.ARP, [iface('fe80::1', AddressType.IPV6), iface('192.0.2.7')]],
      [AddressSource.AGENT, [iface('192.0.2.99')]],
    ]);
    const found = await firstAddress((source) => {
      asked.push(source);
      return Promise.resolve(answers.get(source) ?? []);
    });
    expect(found).toEqual({ ip: '192.0.2.7', from: 'arp' });
    expect(asked).toEqual([AddressSource.LEASE, AddressSource.ARP]);
    expect(ADDRESS_SOURCES.map((s) => s.name)).toEqual(['lease', 'arp', 'agent']);
  });

  it('skips sources libvirt refuses and loopback addresses; none found is undefined', async () => {
    const found = await firstAddress((source) => {
      if (source === AddressSource.LEASE) return Promise.reject(refused(source));
      if (source === AddressSource.ARP) return Promise.resolve([iface('127.0.0.1')]);
      return Promise.resolve([iface('198.51.100.4')]);
    });
    expect(found).toEqual({ ip: '198.51.100.4', from: 'agent' });
    expect(await firstAddress(() => Promise.resolve([]))).toBeUndefined();
  });

  it('lets a lost connection through instead of reading it as "no address"', async () => {
    await expect(firstAddress(() => Promise.reject(new LibvirtConnectionLostError('gone')))).rejects.toBeInstanceOf(
      LibvirtConnectionLostError,
    );
  });
});

describe('metadata element', () => {
  const metadata = { installationId: 'it', proxy: 'kvm-1', specHash: 'abc123', createdAt: 1764448205000, port: 3128 };

  it('round-trips, whatever prefix and quotes libvirt uses when it gives it back', () => {
    expect(parseMetadata(metadataElement(metadata))).toEqual(metadata);
    const asLibvirtReturnsIt = `<egress:instance xmlns:egress='${METADATA_NS}' port='3128' createdAt='1764448205000' specHash='abc123' proxy='kvm-1' installation='it'/>`;
    expect(parseMetadata(asLibvirtReturnsIt)).toEqual(metadata);
  });

  it('is not ours when incomplete: no createdAt, a zero createdAt, no port', () => {
    expect(parseMetadata('<instance installation="it" proxy="p" specHash="h" port="1"/>')).toBeUndefined();
    expect(
      parseMetadata('<instance installation="it" proxy="p" specHash="h" createdAt="0" port="1"/>'),
    ).toBeUndefined();
    expect(parseMetadata('<instance installation="it" proxy="p" specHash="h" createdAt="5"/>')).toBeUndefined();
    expect(parseMetadata('<other/>')).toBeUndefined();
  });

  it('is carried in the domain XML under our namespace, with escaped values', () => {
    const xml = domainXml({
      name: 'ep-kvm-1',
      vcpus: 2,
      memoryMiB: 1024,
      metadata: { ...metadata, specHash: 'a"b' },
      host: {
        uri: 'qemu:///system',
        pool: 'default',
        baseImage: 'debian-12.qcow2',
        baseImageFormat: 'qcow2',
        bridge: 'br0',
        domainType: 'kvm',
        readySignal: 'agent',
        vcpus: 1,
        memoryMiB: 512,
      },
    });
    expect(xml).toContain(`<egress:instance xmlns:egress="${METADATA_NS}" installation="it"`);
    expect(xml).toContain('specHash="a&quot;b"');
    expect(xml).toContain("<source pool='default' volume='ep-kvm-1.qcow2'/>");
    expect(xml).toContain(
      "<source pool='default' volume='ep-kvm-1-seed.iso'/><target dev='vdb' bus='virtio'/><readonly/>",
    );
    expect(xml).toContain("<interface type='bridge'><source bridge='br0'/>");
    expect(xml).toContain("<memory unit='MiB'>1024</memory>");
    expect(xml).toContain("<cpu mode='host-passthrough'/>");
  });
});

describe('domainXml: what the real qemu driver needs (found booting the test image)', () => {
  const metadata = { installationId: 'it', proxy: 'p', specHash: 'h', createdAt: 5, port: 3128 };
  const host = {
    uri: 'qemu:///system',
    pool: 'default',
    baseImage: 'base.qcow2',
    baseImageFormat: 'qcow2' as const,
    network: 'default',
    domainType: 'qemu' as 'kvm' | 'qemu' | 'test',
    readySignal: 'agent' as const,
    vcpus: 1,
    memoryMiB: 512,
  };
  const xml = (over: Partial<typeof host> & Record<string, unknown> = {}) =>
    domainXml({ name: 'ep-q-1', vcpus: 1, memoryMiB: 512, metadata, host: { ...host, ...over } });

  it('emulated (TCG) guests get every CPU feature qemu can emulate; kvm passes the host CPU through', () => {
    expect(xml()).toContain("<domain type='qemu'>");
    expect(xml()).toContain("<cpu mode='maximum' check='none'/>");
    expect(xml({ domainType: 'kvm' })).toContain("<cpu mode='host-passthrough'/>");
    expect(xml({ domainType: 'test' })).not.toContain('<cpu');
  });

  it('boots the base image by default, or its kernel directly when the host names one', () => {
    expect(xml()).toContain("<boot dev='hd'/>");
    const direct = xml({ boot: { kernel: '/img/vmlinuz', initrd: '/img/initrd.img', cmdline: 'root=/dev/vda rw' } });
    expect(direct).toContain(
      '<kernel>/img/vmlinuz</kernel><initrd>/img/initrd.img</initrd><cmdline>root=/dev/vda rw</cmdline>',
    );
    expect(direct).not.toContain('<boot dev=');
  });

  it('keeps the serial console in a log file only where the host has a directory for it', () => {
    // libvirt refuses to start a domain whose console log directory does not exist.
    expect(xml()).toContain("<serial type='pty'/>");
    expect(xml({ consoleLogDir: '/var/log/libvirt/qemu' })).toContain(
      "<log file='/var/log/libvirt/qemu/ep-q-1-serial.log' append='off'/>",
    );
  });

  it('the overlay is the first virtio disk (the root of a direct kernel boot) and the seed a read-only second', () => {
    const out = xml();
    expect(out.indexOf("volume='ep-q-1.qcow2'/><target dev='vda' bus='virtio'/>")).toBeGreaterThan(0);
    expect(out.indexOf("volume='ep-q-1.qcow2'")).toBeLessThan(out.indexOf("volume='ep-q-1-seed.iso'"));
  });
});
