/** Numbers from libvirt's public headers (virterror.h, libvirt-domain.h, libvirt-storage.h) that callers compare against. */

/** `virErrorNumber` values (virterror.h) carried in {@link LibvirtError.code}. */
export const ErrorCode = {
  INTERNAL_ERROR: 1,
  NO_SUPPORT: 3,
  NO_CONNECT: 5,
  INVALID_ARG: 8,
  OPERATION_FAILED: 9,
  XML_ERROR: 27,
  DOM_EXIST: 28,
  OPERATION_DENIED: 29,
  SYSTEM_ERROR: 38,
  RPC: 39,
  NO_DOMAIN: 42,
  NO_NETWORK: 43,
  AUTH_FAILED: 45,
  NO_STORAGE_POOL: 49,
  NO_STORAGE_VOL: 50,
  OPERATION_INVALID: 55,
  CONFIG_UNSUPPORTED: 67,
  OPERATION_TIMEOUT: 68,
  ARGUMENT_UNSUPPORTED: 74,
  NO_DOMAIN_METADATA: 80,
  OPERATION_UNSUPPORTED: 84,
  AGENT_UNRESPONSIVE: 86,
  RESOURCE_BUSY: 87,
  ACCESS_DENIED: 88,
  STORAGE_VOL_EXIST: 90,
  AUTH_UNAVAILABLE: 94,
  NO_HOSTNAME: 108,
} as const;

/** `virDomainState`. */
export const DomainState = {
  NOSTATE: 0,
  RUNNING: 1,
  BLOCKED: 2,
  PAUSED: 3,
  SHUTDOWN: 4,
  SHUTOFF: 5,
  CRASHED: 6,
  PMSUSPENDED: 7,
} as const;

/** `virConnectListAllDomainsFlags` (bits; 0 lists every domain). */
export const ListDomainsFlags = {
  ACTIVE: 1,
  INACTIVE: 2,
  PERSISTENT: 4,
  TRANSIENT: 8,
  RUNNING: 16,
  PAUSED: 32,
  SHUTOFF: 64,
  OTHER: 128,
  MANAGEDSAVE: 256,
  NO_MANAGEDSAVE: 512,
  AUTOSTART: 1024,
  NO_AUTOSTART: 2048,
  HAS_SNAPSHOT: 4096,
  NO_SNAPSHOT: 8192,
} as const;

/** `virDomainUndefineFlagsValues` (bits). */
export const UndefineFlags = {
  MANAGED_SAVE: 1,
  SNAPSHOTS_METADATA: 2,
  NVRAM: 4,
  KEEP_NVRAM: 8,
  CHECKPOINTS_METADATA: 16,
  TPM: 32,
  KEEP_TPM: 64,
} as const;

/** `virDomainMetadataType`. */
export const MetadataType = {
  DESCRIPTION: 0,
  TITLE: 1,
  ELEMENT: 2,
} as const;

/** `virDomainModificationImpact` (bits) for metadata calls. */
export const ModificationImpact = {
  CURRENT: 0,
  LIVE: 1,
  CONFIG: 2,
} as const;

/** `virDomainInterfaceAddressesSource`: where `getInterfaceAddresses` looks. */
export const AddressSource = {
  /** DHCP leases of libvirt's own networks. */
  LEASE: 0,
  /** The QEMU guest agent inside the guest. */
  AGENT: 1,
  /** The host's ARP table. */
  ARP: 2,
} as const;

/** `virIPAddrType`. */
export const AddressType = {
  IPV4: 0,
  IPV6: 1,
} as const;

/** `virStoragePoolState`. */
export const StoragePoolState = {
  INACTIVE: 0,
  BUILDING: 1,
  RUNNING: 2,
  DEGRADED: 3,
  INACCESSIBLE: 4,
} as const;

/** `virStorageVolType`. */
export const StorageVolType = {
  FILE: 0,
  BLOCK: 1,
  DIR: 2,
  NETWORK: 3,
  NETDIR: 4,
  PLOOP: 5,
} as const;
