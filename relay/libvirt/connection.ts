/** {@link LibvirtConnection} over an {@link RpcClient}: one typed wrapper per procedure. */
import { ModificationImpact } from './constants.js';
import type {
  CallOptions,
  CloseReason,
  DomainInterface,
  DomainRef,
  DomainStateInfo,
  LibvirtConnection,
  SetMetadataArgs,
  StoragePoolInfo,
  StoragePoolRef,
  StorageVolInfo,
  StorageVolRef,
  UploadOptions,
  UploadSource,
} from './types.js';
import {
  LIMITS,
  Proc,
  type ProcName,
  readDomain,
  readPool,
  readVol,
  writeDomain,
  writePool,
  writeVol,
} from './procedures.js';
import { QEMU_PROGRAM } from './packet.js';
import type { RpcClient } from './rpc.js';
import { upload } from './stream.js';
import { XdrReader, XdrWriter } from './xdr.js';

const none = (): void => undefined;
/** `QEMU_PROC_DOMAIN_AGENT_COMMAND` of qemu_protocol.x: `virDomainQemuAgentCommand`. */
const QEMU_PROC_DOMAIN_AGENT_COMMAND = 3;
/** How long `close()` waits for CONNECT_CLOSE when the caller gives no timeout. */
const CLOSE_TIMEOUT_MS = 5_000;

/** A connection whose handshake (auth, CONNECT_OPEN) is done by {@link connect}. */
export class Connection implements LibvirtConnection {
  constructor(
    readonly uri: string,
    private readonly rpc: RpcClient,
  ) {}

  get closed(): boolean {
    return this.rpc.closed;
  }

  onClose(listener: (reason: CloseReason) => void): () => void {
    return this.rpc.onClose(listener);
  }

  async close(options: CallOptions = {}): Promise<void> {
    if (this.rpc.closed) return;
    this.rpc.beginClose();
    try {
      await this.invoke('CONNECT_CLOSE', none, none, { timeoutMs: CLOSE_TIMEOUT_MS, ...options });
    } catch {
      // The transport is ended below either way; a daemon that does not answer must not block close().
    } finally {
      this.rpc.shutdown();
    }
  }

  /**
   * Encodes the arguments, makes the call, and decodes the whole reply.
   * @throws LibvirtProtocolError when the reply does not match the procedure's layout
   */
  async invoke<T>(
    name: ProcName,
    write: (w: XdrWriter) => unknown,
    read: (r: XdrReader) => T,
    options?: CallOptions,
  ): Promise<T> {
    const writer = new XdrWriter();
    write(writer);
    const body = await this.rpc.call(Proc[name], name, writer.finish(), options);
    const reader = new XdrReader(body);
    const value = read(reader);
    reader.end();
    return value;
  }

  getHostname(options?: CallOptions): Promise<string> {
    return this.invoke('CONNECT_GET_HOSTNAME', none, (r) => r.string(), options);
  }

  async getLibVersion(options?: CallOptions): Promise<number> {
    return Number(await this.invoke('CONNECT_GET_LIB_VERSION', none, (r) => r.uhyper(), options));
  }

  listAllDomains(flags = 0, options?: CallOptions): Promise<DomainRef[]> {
    return this.invoke(
      'CONNECT_LIST_ALL_DOMAINS',
      (w) => w.int(1).uint(flags),
      (r) => {
        const domains = r.array(readDomain, LIMITS.DOMAIN_LIST);
        r.uint();
        return domains;
      },
      options,
    );
  }

  lookupDomainByName(name: string, options?: CallOptions): Promise<DomainRef> {
    return this.invoke('DOMAIN_LOOKUP_BY_NAME', (w) => w.string(name), readDomain, options);
  }

  defineDomain(xml: string, flags = 0, options?: CallOptions): Promise<DomainRef> {
    return this.invoke('DOMAIN_DEFINE_XML_FLAGS', (w) => w.string(xml).uint(flags), readDomain, options);
  }

  startDomain(domain: DomainRef, flags = 0, options?: CallOptions): Promise<DomainRef> {
    return this.invoke('DOMAIN_CREATE_WITH_FLAGS', (w) => writeDomain(w, domain).uint(flags), readDomain, options);
  }

  destroyDomain(domain: DomainRef, flags = 0, options?: CallOptions): Promise<void> {
    return this.invoke('DOMAIN_DESTROY_FLAGS', (w) => writeDomain(w, domain).uint(flags), none, options);
  }

  undefineDomain(domain: DomainRef, flags = 0, options?: CallOptions): Promise<void> {
    return this.invoke('DOMAIN_UNDEFINE_FLAGS', (w) => writeDomain(w, domain).uint(flags), none, options);
  }

  getDomainState(domain: DomainRef, options?: CallOptions): Promise<DomainStateInfo> {
    return this.invoke(
      'DOMAIN_GET_STATE',
      (w) => writeDomain(w, domain).uint(0),
      (r) => ({ state: r.int(), reason: r.int() }),
      options,
    );
  }

  getDomainXml(domain: DomainRef, flags = 0, options?: CallOptions): Promise<string> {
    return this.invoke(
      'DOMAIN_GET_XML_DESC',
      (w) => writeDomain(w, domain).uint(flags),
      (r) => r.string(),
      options,
    );
  }

  getDomainMetadata(
    domain: DomainRef,
    type: number,
    uri?: string,
    flags: number = ModificationImpact.CURRENT,
    options?: CallOptions,
  ): Promise<string> {
    return this.invoke(
      'DOMAIN_GET_METADATA',
      (w) => writeDomain(w, domain).int(type).optString(uri).uint(flags),
      (r) => r.string(),
      options,
    );
  }

  setDomainMetadata(domain: DomainRef, args: SetMetadataArgs, options?: CallOptions): Promise<void> {
    return this.invoke(
      'DOMAIN_SET_METADATA',
      (w) =>
        writeDomain(w, domain)
          .int(args.type)
          .optString(args.metadata)
          .optString(args.key)
          .optString(args.uri)
          .uint(args.flags ?? ModificationImpact.CURRENT),
      none,
      options,
    );
  }

  getInterfaceAddresses(domain: DomainRef, source: number, options?: CallOptions): Promise<DomainInterface[]> {
    const readInterface = (r: XdrReader): DomainInterface => ({
      name: r.string(),
      hwaddr: r.optString(),
      addrs: r.array((a) => ({ type: a.int(), addr: a.string(), prefix: a.uint() }), LIMITS.IP_ADDRESSES),
    });
    return this.invoke(
      'DOMAIN_INTERFACE_ADDRESSES',
      (w) => writeDomain(w, domain).uint(source).uint(0),
      (r) => r.array(readInterface, LIMITS.INTERFACES),
      options,
    );
  }

  async agentCommand(
    domain: DomainRef,
    command: string,
    timeoutSeconds: number,
    options?: CallOptions,
  ): Promise<string> {
    const writer = new XdrWriter();
    writeDomain(writer, domain).string(command).int(timeoutSeconds).uint(0);
    const body = await this.rpc.call(
      QEMU_PROC_DOMAIN_AGENT_COMMAND,
      'QEMU_DOMAIN_AGENT_COMMAND',
      writer.finish(),
      options,
      QEMU_PROGRAM,
    );
    const reader = new XdrReader(body);
    const result = reader.optString();
    reader.end();
    return result ?? '';
  }

  lookupStoragePoolByName(name: string, options?: CallOptions): Promise<StoragePoolRef> {
    return this.invoke('STORAGE_POOL_LOOKUP_BY_NAME', (w) => w.string(name), readPool, options);
  }

  getStoragePoolInfo(pool: StoragePoolRef, options?: CallOptions): Promise<StoragePoolInfo> {
    return this.invoke(
      'STORAGE_POOL_GET_INFO',
      (w) => writePool(w, pool),
      (r) => ({ state: r.uint(), capacity: r.uhyper(), allocation: r.uhyper(), available: r.uhyper() }),
      options,
    );
  }

  refreshStoragePool(pool: StoragePoolRef, options?: CallOptions): Promise<void> {
    return this.invoke('STORAGE_POOL_REFRESH', (w) => writePool(w, pool).uint(0), none, options);
  }

  createStorageVol(pool: StoragePoolRef, xml: string, flags = 0, options?: CallOptions): Promise<StorageVolRef> {
    return this.invoke('STORAGE_VOL_CREATE_XML', (w) => writePool(w, pool).string(xml).uint(flags), readVol, options);
  }

  lookupStorageVolByName(pool: StoragePoolRef, name: string, options?: CallOptions): Promise<StorageVolRef> {
    return this.invoke('STORAGE_VOL_LOOKUP_BY_NAME', (w) => writePool(w, pool).string(name), readVol, options);
  }

  getStorageVolPath(vol: StorageVolRef, options?: CallOptions): Promise<string> {
    return this.invoke(
      'STORAGE_VOL_GET_PATH',
      (w) => writeVol(w, vol),
      (r) => r.string(),
      options,
    );
  }

  getStorageVolInfo(vol: StorageVolRef, options?: CallOptions): Promise<StorageVolInfo> {
    return this.invoke(
      'STORAGE_VOL_GET_INFO',
      (w) => writeVol(w, vol),
      (r) => ({ type: r.int(), capacity: r.uhyper(), allocation: r.uhyper() }),
      options,
    );
  }

  deleteStorageVol(vol: StorageVolRef, flags = 0, options?: CallOptions): Promise<void> {
    return this.invoke('STORAGE_VOL_DELETE', (w) => writeVol(w, vol).uint(flags), none, options);
  }

  uploadStorageVol(vol: StorageVolRef, data: UploadSource, options: UploadOptions = {}): Promise<void> {
    const args = writeVol(new XdrWriter(), vol)
      .uhyper(options.offset ?? 0n)
      .uhyper(options.length ?? 0n)
      .uint(0)
      .finish();
    return upload(this.rpc, Proc.STORAGE_VOL_UPLOAD, 'STORAGE_VOL_UPLOAD', args, data, options);
  }
}
