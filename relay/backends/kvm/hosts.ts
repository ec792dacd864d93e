/**
 * The kvm backend's access to its hosts: one connection per daemon URI, each libvirt call in a
 * `libvirt.<procedure>` span, the storage pool and our domains looked up by name, and libvirt's
 * failures turned into the contract's typed errors.
 */
import { EgressError, PermanentError, RetryableError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import { backendCall } from '../../../shared/telemetry/spans.js';
import type { KvmBackendConfig, KvmHostConfig } from './options.js';
import {
  connect,
  ErrorCode,
  isLibvirtError,
  MetadataType,
  type DomainRef,
  type LibvirtConnection,
  type StoragePoolRef,
} from '../../libvirt/index.js';
import { ConnectionPool, DialError } from './connections.js';
import { METADATA_NS, parseMetadata, type InstanceMetadata } from './domain-xml.js';

/** A domain of ours, found on a host. */
export interface Found {
  host: string;
  conn: LibvirtConnection;
  domain: DomainRef;
  metadata: InstanceMetadata;
}

/** The hosts of one kvm provider. Nothing is dialled until the first call. */
export class KvmHosts {
  private readonly pool: ConnectionPool;

  constructor(
    private readonly config: KvmBackendConfig,
    logger: Logger,
  ) {
    const callTimeoutMs = config.callTimeoutSeconds * 1000;
    this.pool = new ConnectionPool({
      connectTimeoutMs: config.connectTimeoutSeconds * 1000,
      logger,
      dial: (uri, signal) => connect(uri, { signal, callTimeoutMs, timeoutMs: config.connectTimeoutSeconds * 1000 }),
    });
  }

  /** The configured host names. */
  names(): string[] {
    return Object.keys(this.config.hosts);
  }

  hostConfig(host: string): KvmHostConfig {
    const config = this.config.hosts[host];
    if (!config)
      throw new PermanentError(`${JSON.stringify(host)} is not a host of this provider`, 'spec.placement.host');
    return config;
  }

  /** The connection to the host's daemon. */
  connection(host: string): Promise<LibvirtConnection> {
    return this.pool.get(this.hostConfig(host).uri);
  }

  /** The host's storage pool, on its storage endpoint. */
  async storagePool(host: string): Promise<{ conn: LibvirtConnection; pool: StoragePoolRef }> {
    const config = this.hostConfig(host);
    const conn = await this.pool.get(config.storageUri ?? config.uri);
    const pool = await this.call('libvirt.storagePoolLookupByName', host, '', () =>
      conn.lookupStoragePoolByName(config.pool),
    ).catch((err: unknown) => {
      if (isLibvirtError(err, ErrorCode.NO_STORAGE_POOL))
        throw new RetryableError(`storage pool ${config.pool} does not exist on host ${host}`, 60_000, { cause: err });
      throw err;
    });
    return { conn, pool };
  }

  lookup(host: string, conn: LibvirtConnection, name: string): Promise<DomainRef | undefined> {
    return this.call('libvirt.domainLookupByName', host, name, () =>
      ignoring(conn.lookupDomainByName(name), ErrorCode.NO_DOMAIN),
    );
  }

  /** Our metadata element, or undefined when the domain has none (not ours) or an unreadable one. */
  async metadataOf(host: string, conn: LibvirtConnection, domain: DomainRef): Promise<InstanceMetadata | undefined> {
    const xml = await this.call('libvirt.domainGetMetadata', host, domain.name, () =>
      ignoring(conn.getDomainMetadata(domain, MetadataType.ELEMENT, METADATA_NS), ErrorCode.NO_DOMAIN_METADATA),
    );
    return xml === undefined ? undefined : parseMetadata(xml);
  }

  /** The domain `name` on `host` when it is ours (carries our metadata element). */
  async findOn(host: string, name: string): Promise<Found | undefined> {
    const conn = await this.connection(host);
    const domain = await this.lookup(host, conn, name);
    const metadata = domain ? await this.metadataOf(host, conn, domain) : undefined;
    return domain && metadata ? { host, conn, domain, metadata } : undefined;
  }

  /** One libvirt call in a `libvirt.<procedure>` span (a child of whatever the relay is doing). */
  call<T>(span: string, host: string, instance: string, fn: () => Promise<T>): Promise<T> {
    return backendCall(span, instance ? attrs(host, instance) : { 'kvm.host': host }, fn);
  }

  /**
   * Runs work against one host, turning what the libvirt client throws into the contract's typed
   * errors: a connection that cannot be dialled, is lost or times out is Retryable (the pool dials
   * again on the next call); libvirt's own errors are Retryable too, unless already typed.
   */
  async onHost<T>(host: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof EgressError) throw err;
      if (err instanceof DialError) throw new RetryableError(`host ${host}: ${err.message}`, 5000, { cause: err });
      throw new RetryableError(`host ${host}: ${message(err)}`, 2000, { cause: err });
    }
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}

/** Span attributes naming the host and the instance. */
export function attrs(host: string, instance: string) {
  return { 'kvm.host': host, 'kvm.instance': instance };
}

/** Resolves to undefined instead of rejecting when libvirt answers with one of `codes`. */
export async function ignoring<T>(call: Promise<T>, ...codes: number[]): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (codes.length > 0 && isLibvirtError(err, ...codes)) return undefined;
    throw err;
  }
}

export function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
