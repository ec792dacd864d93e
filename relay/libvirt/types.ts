/** The types of the libvirt client's public API: the connection, the objects it names, call options. */
import type { LibvirtConnectionLostError } from './errors.js';

/** Options every call accepts. */
export interface CallOptions {
  /** Rejects with {@link LibvirtTimeoutError} after this many ms; defaults to the connection's `callTimeoutMs`. */
  timeoutMs?: number;
  /** Rejects with {@link LibvirtCancelledError} when aborted; the reply, if it still arrives, is dropped. */
  signal?: AbortSignal;
}

/** A domain as libvirt identifies it on the wire (`remote_nonnull_domain`). */
export interface DomainRef {
  name: string;
  /** 16 raw bytes. */
  uuid: Uint8Array;
  /** The running id, -1 when the domain is not running (as seen at the time of the call). */
  id: number;
}

/** A storage pool as libvirt identifies it (`remote_nonnull_storage_pool`). */
export interface StoragePoolRef {
  name: string;
  /** 16 raw bytes. */
  uuid: Uint8Array;
}

/** A storage volume as libvirt identifies it (`remote_nonnull_storage_vol`). */
export interface StorageVolRef {
  /** The pool's name. */
  pool: string;
  name: string;
  /** The volume's key (for file-based pools, its path). */
  key: string;
}

/** `virDomainGetState`: the state (one of {@link DomainState}) and its reason (state-specific enum). */
export interface DomainStateInfo {
  state: number;
  reason: number;
}

/** One address of a guest interface. */
export interface DomainIpAddress {
  /** One of {@link AddressType}. */
  type: number;
  addr: string;
  prefix: number;
}

/** A guest interface as `virDomainInterfaceAddresses` reports it. */
export interface DomainInterface {
  name: string;
  /** The MAC address, when known. */
  hwaddr: string | undefined;
  addrs: DomainIpAddress[];
}

/** `virStoragePoolGetInfo`: sizes in bytes. */
export interface StoragePoolInfo {
  /** One of {@link StoragePoolState}. */
  state: number;
  capacity: bigint;
  allocation: bigint;
  available: bigint;
}

/** `virStorageVolGetInfo`: sizes in bytes. */
export interface StorageVolInfo {
  /** One of {@link StorageVolType}. */
  type: number;
  capacity: bigint;
  allocation: bigint;
}

/** `virDomainSetMetadata` arguments. */
export interface SetMetadataArgs {
  /** One of {@link MetadataType}; `ELEMENT` for custom XML under a namespace. */
  type: number;
  /** The new content; `undefined` removes it. For `ELEMENT`, one XML element. */
  metadata: string | undefined;
  /** Namespace prefix (for `ELEMENT` only). */
  key?: string;
  /** Namespace URI (for `ELEMENT` only). */
  uri?: string;
  /** {@link ModificationImpact} bits; default `CURRENT`. */
  flags?: number;
}

/** Bytes to upload: one buffer, or chunks from a stream or generator. */
export type UploadSource = Uint8Array | AsyncIterable<Uint8Array> | Iterable<Uint8Array>;

/** `virStorageVolUpload` options. */
export interface UploadOptions extends CallOptions {
  /** Where in the volume to start writing; default 0. */
  offset?: bigint;
  /** How many bytes will be sent; default 0, which libvirt takes as "no limit" (the rest of the volume). */
  length?: bigint;
}

/** Why a connection ended: `undefined` after {@link LibvirtConnection.close}, otherwise the error that dropped it. */
export type CloseReason = LibvirtConnectionLostError | undefined;

/**
 * One open connection to a libvirt daemon. Safe for concurrent use: calls are pipelined and replies
 * matched by serial. Every method rejects with {@link LibvirtError} (libvirt's own error, check
 * `code` against {@link ErrorCode}), {@link LibvirtTimeoutError}, {@link LibvirtCancelledError}, or
 * a {@link LibvirtConnectionError} once the connection is closed or lost (the connection is then
 * unusable: dial a new one).
 */
export interface LibvirtConnection {
  /** The URI this connection was dialled with. */
  readonly uri: string;
  /** True once closed or lost; every later call rejects with a connection error. */
  readonly closed: boolean;
  /**
   * Registers a listener called once when the connection ends.
   * @returns a function that removes the listener
   */
  onClose(listener: (reason: CloseReason) => void): () => void;
  /** Sends CONNECT_CLOSE (bounded by `timeoutMs`), then ends the transport; calls in flight reject. Idempotent. */
  close(options?: CallOptions): Promise<void>;

  /** `virConnectGetHostname`. */
  getHostname(options?: CallOptions): Promise<string>;
  /** `virConnectGetLibVersion`: major × 1,000,000 + minor × 1,000 + release. */
  getLibVersion(options?: CallOptions): Promise<number>;

  /** `virConnectListAllDomains` with {@link ListDomainsFlags} bits (0 = all). */
  listAllDomains(flags?: number, options?: CallOptions): Promise<DomainRef[]>;
  /** `virDomainLookupByName`; rejects with `ErrorCode.NO_DOMAIN` when there is none. */
  lookupDomainByName(name: string, options?: CallOptions): Promise<DomainRef>;
  /** `virDomainDefineXMLFlags`: defines (or redefines) a persistent domain. */
  defineDomain(xml: string, flags?: number, options?: CallOptions): Promise<DomainRef>;
  /** `virDomainCreateWithFlags`: starts a defined domain; returns it with its new id. */
  startDomain(domain: DomainRef, flags?: number, options?: CallOptions): Promise<DomainRef>;
  /** `virDomainDestroyFlags`: hard stop; `OPERATION_INVALID` when not running. */
  destroyDomain(domain: DomainRef, flags?: number, options?: CallOptions): Promise<void>;
  /** `virDomainUndefineFlags` with {@link UndefineFlags} bits. */
  undefineDomain(domain: DomainRef, flags?: number, options?: CallOptions): Promise<void>;
  /** `virDomainGetState`. */
  getDomainState(domain: DomainRef, options?: CallOptions): Promise<DomainStateInfo>;
  /** `virDomainGetXMLDesc`. */
  getDomainXml(domain: DomainRef, flags?: number, options?: CallOptions): Promise<string>;
  /**
   * `virDomainGetMetadata`; rejects with `ErrorCode.NO_DOMAIN_METADATA` when there is none.
   * @param type - one of {@link MetadataType}
   * @param uri - the namespace URI (for `ELEMENT` only)
   */
  getDomainMetadata(
    domain: DomainRef,
    type: number,
    uri?: string,
    flags?: number,
    options?: CallOptions,
  ): Promise<string>;
  /** `virDomainSetMetadata`. */
  setDomainMetadata(domain: DomainRef, args: SetMetadataArgs, options?: CallOptions): Promise<void>;
  /** `virDomainInterfaceAddresses` from one {@link AddressSource}. */
  getInterfaceAddresses(domain: DomainRef, source: number, options?: CallOptions): Promise<DomainInterface[]>;
  /**
   * `virDomainQemuAgentCommand` (qemu driver only): sends one QEMU guest agent command (JSON) and
   * returns the agent's JSON reply. libvirt marks the domain tainted (`custom-ga-command`).
   * @param timeoutSeconds - how long libvirt waits for the agent (positive seconds)
   */
  agentCommand(domain: DomainRef, command: string, timeoutSeconds: number, options?: CallOptions): Promise<string>;

  /** `virStoragePoolLookupByName`; rejects with `ErrorCode.NO_STORAGE_POOL` when there is none. */
  lookupStoragePoolByName(name: string, options?: CallOptions): Promise<StoragePoolRef>;
  /** `virStoragePoolGetInfo`. */
  getStoragePoolInfo(pool: StoragePoolRef, options?: CallOptions): Promise<StoragePoolInfo>;
  /** `virStoragePoolRefresh`: rescans the pool's volumes. */
  refreshStoragePool(pool: StoragePoolRef, options?: CallOptions): Promise<void>;
  /** `virStorageVolCreateXML`. */
  createStorageVol(pool: StoragePoolRef, xml: string, flags?: number, options?: CallOptions): Promise<StorageVolRef>;
  /** `virStorageVolLookupByName`; rejects with `ErrorCode.NO_STORAGE_VOL` when there is none. */
  lookupStorageVolByName(pool: StoragePoolRef, name: string, options?: CallOptions): Promise<StorageVolRef>;
  /** `virStorageVolGetPath`. */
  getStorageVolPath(vol: StorageVolRef, options?: CallOptions): Promise<string>;
  /** `virStorageVolGetInfo`. */
  getStorageVolInfo(vol: StorageVolRef, options?: CallOptions): Promise<StorageVolInfo>;
  /** `virStorageVolDelete`. */
  deleteStorageVol(vol: StorageVolRef, flags?: number, options?: CallOptions): Promise<void>;
  /**
   * `virStorageVolUpload` over a stream: sends every byte of `data`, then the end-of-stream packet,
   * and resolves once the daemon confirms it has written everything. `timeoutMs` bounds the whole upload.
   */
  uploadStorageVol(vol: StorageVolRef, data: UploadSource, options?: UploadOptions): Promise<void>;
}
