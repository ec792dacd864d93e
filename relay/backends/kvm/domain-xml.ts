/** The XML the kvm backend hands to libvirt (domain, volumes) and the metadata element it reads back. */
import type { KvmHostConfig } from './options.js';

/** Our metadata namespace: a domain carrying an element in it was created by this backend. */
export const METADATA_NS = 'https://egress.dev/xmlns/kvm-instance/1';
/** The namespace prefix libvirt records for it. */
export const METADATA_PREFIX = 'egress';

/** What a domain's metadata element records about its instance. */
export interface InstanceMetadata {
  installationId: string;
  proxy: string;
  specHash: string;
  /** Epoch ms; never zero. */
  createdAt: number;
  /** The proxy port in the guest. */
  port: number;
}

/** The element stored with `virDomainSetMetadata`/in `<metadata>` (without the namespace declaration). */
export function metadataElement(m: InstanceMetadata): string {
  return `<instance installation="${esc(m.installationId)}" proxy="${esc(m.proxy)}" specHash="${esc(m.specHash)}" createdAt="${m.createdAt}" port="${m.port}"/>`;
}

/**
 * Reads our element as libvirt returns it (any prefix, either quote style).
 * @returns undefined when it is not a complete element of ours
 */
export function parseMetadata(xml: string): InstanceMetadata | undefined {
  const tag = /<(?:[A-Za-z_][\w.-]*:)?instance\b([^>]*)\/?>/.exec(xml);
  if (!tag?.[1]) return undefined;
  const attrs = new Map<string, string>();
  for (const m of tag[1].matchAll(/([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) {
    if (m[1]) attrs.set(m[1], unesc(m[2] ?? m[3] ?? ''));
  }
  const installationId = attrs.get('installation');
  const proxy = attrs.get('proxy');
  const specHash = attrs.get('specHash');
  const createdAt = Number(attrs.get('createdAt'));
  const port = Number(attrs.get('port'));
  if (!installationId || !proxy || specHash === undefined) return undefined;
  if (!(Number.isSafeInteger(createdAt) && createdAt > 0)) return undefined;
  if (!(Number.isInteger(port) && port >= 1 && port <= 65535)) return undefined;
  return { installationId, proxy, specHash, createdAt, port };
}

/** The volumes an instance owns in its host's pool. */
export function volumeNames(instance: string): { overlay: string; seed: string } {
  return { overlay: `${instance}.qcow2`, seed: `${instance}-seed.iso` };
}

/** A qcow2 overlay backed by the base image (`backingPath` from `virStorageVolGetPath`). */
export function overlayVolumeXml(
  name: string,
  capacityBytes: bigint,
  backingPath: string,
  backingFormat: string,
): string {
  return [
    "<volume type='file'>",
    `  <name>${esc(name)}</name>`,
    `  <capacity unit='bytes'>${capacityBytes}</capacity>`,
    "  <target><format type='qcow2'/></target>",
    `  <backingStore><path>${esc(backingPath)}</path><format type='${esc(backingFormat)}'/></backingStore>`,
    '</volume>',
  ].join('\n');
}

/** A raw volume of exactly `bytes` bytes, for the seed image. */
export function seedVolumeXml(name: string, bytes: number): string {
  return [
    "<volume type='file'>",
    `  <name>${esc(name)}</name>`,
    `  <capacity unit='bytes'>${bytes}</capacity>`,
    "  <target><format type='raw'/></target>",
    '</volume>',
  ].join('\n');
}

/** What the domain is built from. */
export interface DomainInput {
  name: string;
  host: KvmHostConfig;
  vcpus: number;
  memoryMiB: number;
  metadata: InstanceMetadata;
}

/**
 * A persistent domain: the overlay as `vda`, the seed read-only as `vdb` (NoCloud finds it by its
 * label), one virtio NIC on the host's network or bridge, the guest agent's channel, a serial
 * console. A crash or power-off ends the domain (the backend reports it Stopped and it is replaced).
 */
export function domainXml(d: DomainInput): string {
  const { overlay, seed } = volumeNames(d.name);
  const pool = esc(d.host.pool);
  const nic = d.host.network
    ? `<interface type='network'><source network='${esc(d.host.network)}'/><model type='virtio'/></interface>`
    : `<interface type='bridge'><source bridge='${esc(d.host.bridge ?? '')}'/><model type='virtio'/></interface>`;
  return [
    `<domain type='${d.host.domainType}'>`,
    `  <name>${esc(d.name)}</name>`,
    '  <metadata>',
    `    ${metadataElement(d.metadata).replace('<instance ', `<${METADATA_PREFIX}:instance xmlns:${METADATA_PREFIX}="${METADATA_NS}" `)}`,
    '  </metadata>',
    `  <memory unit='MiB'>${d.memoryMiB}</memory>`,
    `  <vcpu>${d.vcpus}</vcpu>`,
    `  <os>${osXml(d.host)}</os>`,
    '  <features><acpi/><apic/></features>',
    ...cpuXml(d.host.domainType),
    '  <on_poweroff>destroy</on_poweroff>',
    '  <on_reboot>restart</on_reboot>',
    '  <on_crash>destroy</on_crash>',
    '  <devices>',
    `    <disk type='volume' device='disk'><driver name='qemu' type='qcow2'/><source pool='${pool}' volume='${esc(overlay)}'/><target dev='vda' bus='virtio'/></disk>`,
    `    <disk type='volume' device='disk'><driver name='qemu' type='raw'/><source pool='${pool}' volume='${esc(seed)}'/><target dev='vdb' bus='virtio'/><readonly/></disk>`,
    `    ${nic}`,
    "    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>",
    // What cloud-init printed is the first thing to read when a guest never serves.
    d.host.consoleLogDir
      ? `    <serial type='pty'><log file='${esc(`${d.host.consoleLogDir}/${d.name}-serial.log`)}' append='off'/></serial>`
      : "    <serial type='pty'/>",
    "    <console type='pty'/>",
    "    <rng model='virtio'><backend model='random'>/dev/urandom</backend></rng>",
    '  </devices>',
    '</domain>',
  ].join('\n');
}

/** Direct kernel boot when the host names a kernel, else the base image's own boot loader. */
function osXml(host: KvmHostConfig): string {
  const type = "<type arch='x86_64'>hvm</type>";
  if (!host.boot) return `${type}<boot dev='hd'/>`;
  const { kernel, initrd, cmdline } = host.boot;
  return `${type}<kernel>${esc(kernel)}</kernel>${initrd ? `<initrd>${esc(initrd)}</initrd>` : ''}<cmdline>${esc(cmdline)}</cmdline>`;
}

/**
 * `kvm` passes the host CPU through; `qemu` (TCG) emulates every feature it can, without checking
 * against the host (qemu's default model lacks what current distribution kernels expect).
 */
function cpuXml(domainType: KvmHostConfig['domainType']): string[] {
  if (domainType === 'kvm') return ["  <cpu mode='host-passthrough'/>"];
  if (domainType === 'qemu') return ["  <cpu mode='maximum' check='none'/>"];
  return [];
}

function esc(s: string): string {
  return s
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;');
}

function unesc(s: string): string {
  return s
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}
