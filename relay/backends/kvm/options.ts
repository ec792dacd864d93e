/** The kvm backend's options (its entry in the relay configuration): its hosts, machine sizes and defaults. */
import { z } from 'zod';
import { egressPolicySchema } from '../../../shared/config/egress-policy.js';
import { dnsLabel } from '../../../shared/domain/names.js';
import { parseLibvirtUri } from '../../libvirt/index.js';
import { absolutePath, port, seconds } from '../option-fields.js';

/** A libvirt URI the client can dial (`qemu+ssh://admin@beelink/system`); the error names the bad part. */
const libvirtUri = z
  .string()
  .min(1)
  .superRefine((uri, ctx) => {
    try {
      parseLibvirtUri(uri);
    } catch (err) {
      ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : String(err) });
    }
  });

/** One libvirt host of a `kvm` backend. */
export const kvmHostSchema = z
  .strictObject({
    /** Where the domains live (`qemu+ssh://admin@beelink/system`, `qemu:///system`). */
    uri: libvirtUri,
    /** Where the storage pool lives when another endpoint serves it (`storage:///system`); default `uri`. */
    storageUri: libvirtUri.optional(),
    /** The storage pool that holds the base image, the overlays and the seeds. */
    pool: z.string().min(1).max(255),
    /** The base image: a volume of `pool` every overlay is backed by (a cloud image with cloud-init). */
    baseImage: z.string().min(1).max(255),
    baseImageFormat: z.enum(['qcow2', 'raw']).default('qcow2'),
    /** A libvirt network (leases known to libvirt) or a host bridge: exactly one. */
    network: z.string().min(1).max(255).optional(),
    bridge: z.string().min(1).max(255).optional(),
    /**
     * The domain type: `kvm` (hardware acceleration), `qemu` (emulated by TCG: hosts without a
     * usable `/dev/kvm`, such as nested machines) or `test` (libvirt's test driver). Never derived
     * from `/dev/kvm` existing: libvirt advertises `kvm` where the device cannot run a guest.
     */
    domainType: z.enum(['kvm', 'qemu', 'test']).default('kvm'),
    /**
     * How the guest boots: absent, from the base image's own boot loader (a distribution's cloud
     * image); set, by direct kernel boot of these host paths (an image without a boot loader).
     */
    boot: z
      .strictObject({
        kernel: absolutePath,
        initrd: absolutePath.optional(),
        cmdline: z.string().max(4096).default('root=/dev/vda rw console=ttyS0'),
      })
      .optional(),
    /**
     * When a guest counts as Running: `agent` once the guest says its proxy serves (cloud-init's last
     * step writes a marker the backend reads through the QEMU guest agent); `none` as soon as it has
     * an address (images without the agent; probes then judge it after the startup grace).
     */
    readySignal: z.enum(['agent', 'none']).default('agent'),
    /**
     * A host directory where each guest's serial console is kept (`<name>-serial.log`), e.g.
     * `/var/log/libvirt/qemu` of a `qemu:///system` host; it must exist. Absent: no console log.
     */
    consoleLogDir: absolutePath.optional(),
    /** Defaults for a placement that names no size. */
    vcpus: z.number().int().min(1).max(64).default(1),
    memoryMiB: z.number().int().min(128).max(262_144).default(512),
  })
  .refine((h) => (h.network === undefined) !== (h.bridge === undefined), {
    message: 'set exactly one of network or bridge',
    path: ['network'],
  });
export type KvmHostConfig = z.infer<typeof kvmHostSchema>;

/** A named machine size a placement may ask for (`placement.size`). */
const kvmSizeSchema = z.strictObject({
  vcpus: z.number().int().min(1).max(64),
  memoryMiB: z.number().int().min(128).max(262_144),
  /** The overlay's virtual size; at least the base image's (cloud-init grows the root filesystem). */
  diskGiB: z.number().int().min(1).max(4096).optional(),
});

/** A `kvm` backend: proxies are libvirt guests on the configured hosts. */
export const kvmBackendSchema = z.strictObject({
  provider: dnsLabel,
  type: z.literal('kvm'),
  /** The per-instance credentials the relay probes with (files of mode 0600). */
  stateDir: z.string().min(1),
  /** Hosts by name (the `placement.host` a proxy names). */
  hosts: z.record(dnsLabel, kvmHostSchema).refine((h) => Object.keys(h).length > 0, 'at least one host is required'),
  /** Machine sizes by name (the `placement.size` a proxy names). */
  sizes: z.record(dnsLabel, kvmSizeSchema).default({}),
  /** The proxy port in the guests when a proxy asks for none. */
  defaultPort: port.default(3128),
  /** How long dialling a host may take. */
  connectTimeoutSeconds: seconds.default(10),
  /** How long one libvirt call may take (an upload included). */
  callTimeoutSeconds: seconds.default(30),
  /**
   * How long after its creation a guest may fail its probes before they count: cloud-init installs
   * the proxy after the guest has an address. Failures before the first success in this window are
   * not reported, so the proxy stays Provisioning instead of being replaced while it boots.
   */
  startupGraceSeconds: z.number().min(0).default(600),
  /** Where the guests' proxies may connect, enforced in each guest (shared/config/egress-policy.ts). */
  egress: egressPolicySchema.prefault({}),
});
export type KvmBackendConfig = z.infer<typeof kvmBackendSchema>;
