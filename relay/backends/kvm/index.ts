/**
 * The `kvm` backend: each proxy instance is a libvirt domain on one of the configured hosts,
 * booting a qcow2 overlay of the host's base image with a NoCloud seed that installs and
 * configures tinyproxy. Ownership is the domain's metadata element (`domain-xml.ts`); the relay
 * keeps only the host and the credentials of each instance (`records.ts`).
 */
import { performance } from 'node:perf_hooks';
import { EgressError, NotFoundError, PermanentError, RetryableError, ValidationError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { Instance, InstanceSpec, ProviderHealth } from '../../../shared/providers/contract.js';
import { backendCall } from '../../../shared/telemetry/spans.js';
import type { KvmBackendConfig, KvmHostConfig } from '../../config.js';
import { KeyedSerializer } from '../../keyed-serializer.js';
import {
  connect,
  ErrorCode,
  isLibvirtError,
  MetadataType,
  StoragePoolState,
  UndefineFlags,
  type DomainRef,
  type LibvirtConnection,
  type StoragePoolRef,
} from '../../libvirt/index.js';
import { parseCreateSpec, type ProxyCredentials, type RelayBackend } from '../backend.js';
import { ConnectionPool, DialError } from './connections.js';
import {
  domainXml,
  METADATA_NS,
  overlayVolumeXml,
  parseMetadata,
  seedVolumeXml,
  volumeNames,
  type InstanceMetadata,
} from './domain-xml.js';
import { firstAddress, instanceState, isActive } from './observe.js';
import { guestSaysReady } from './readiness.js';
import { RecordStore } from './records.js';
import { buildSeed } from './seed.js';

/** How a kvm backend is set up (one per configured `kvm` provider on a relay). */
export interface KvmBackendOptions {
  config: KvmBackendConfig;
  /** This installation's id: `list` returns only domains carrying it. */
  installationId: string;
  logger: Logger;
  now?: () => number;
}

const GIB = 1024n * 1024n * 1024n;

/** A domain of ours, found on a host. */
interface Found {
  host: string;
  conn: LibvirtConnection;
  domain: DomainRef;
  metadata: InstanceMetadata;
}

class KvmBackend implements RelayBackend {
  readonly type = 'kvm';
  readonly probesRemotely = true;
  readonly name: string;
  readonly startupGraceMs: number;
  private readonly serial = new KeyedSerializer();
  private readonly pool: ConnectionPool;
  private readonly records: RecordStore;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly callTimeoutMs: number;
  private closed = false;
  /** Domain incarnations whose guest said its proxy serves (see {@link signalledReady}). */
  private readonly ready = new Set<string>();

  constructor(private readonly opts: KvmBackendOptions) {
    const { config } = opts;
    this.name = config.provider;
    this.log = opts.logger.child({ provider: config.provider, backend: 'kvm' });
    this.now = opts.now ?? Date.now;
    this.callTimeoutMs = config.callTimeoutSeconds * 1000;
    this.startupGraceMs = config.startupGraceSeconds * 1000;
    this.records = new RecordStore(config.stateDir, config.provider);
    this.pool = new ConnectionPool({
      connectTimeoutMs: config.connectTimeoutSeconds * 1000,
      logger: this.log,
      dial: (uri, signal) =>
        connect(uri, { signal, callTimeoutMs: this.callTimeoutMs, timeoutMs: config.connectTimeoutSeconds * 1000 }),
    });
  }

  /** Placement keys: `host` (required when the provider has several) and `size` (a configured size). */
  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    for (const key of Object.keys(placement)) {
      if (key !== 'host' && key !== 'size')
        throw new ValidationError(`spec.placement.${key}`, 'unknown key for a kvm provider (allowed: host, size)');
    }
    const hosts = Object.keys(this.opts.config.hosts);
    const host = placement['host'] ?? (hosts.length === 1 ? hosts[0] : undefined);
    if (host === undefined)
      throw new ValidationError(
        'spec.placement.host',
        `required: this provider has several hosts (${hosts.join(', ')})`,
      );
    if (typeof host !== 'string' || !hosts.includes(host))
      throw new ValidationError(
        'spec.placement.host',
        `${JSON.stringify(host)} is not a host of this provider (known: ${hosts.join(', ')})`,
      );
    const size = placement['size'];
    if (size === undefined) return { host };
    const sizes = Object.keys(this.opts.config.sizes);
    if (typeof size !== 'string' || !sizes.includes(size))
      throw new ValidationError(
        'spec.placement.size',
        `${JSON.stringify(size)} is not a size of this provider (known: ${sizes.join(', ') || 'none'})`,
      );
    return { host, size };
  }

  async create(input: InstanceSpec): Promise<Instance> {
    this.assertOpen();
    const { spec, placement } = parseCreateSpec(input, (p) => this.resolvePlacement(p));
    const host = String(placement['host']);
    const size = typeof placement['size'] === 'string' ? placement['size'] : undefined;
    return this.serial.run(spec.name, () => this.onHost(host, () => this.createLocked(spec, host, size)));
  }

  private async createLocked(spec: InstanceSpec, host: string, size: string | undefined): Promise<Instance> {
    const conn = await this.pool.get(this.hostConfig(host).uri);
    const existing = await this.lookup(host, conn, spec.name);
    if (existing) {
      const metadata = await this.metadataOf(host, conn, existing);
      if (!metadata || metadata.installationId !== spec.installationId)
        throw new PermanentError(
          `a domain named ${spec.name} exists on host ${host} and is not this instance`,
          'spec.name',
        );
      await this.records.write({ name: spec.name, host, credentials: spec.credentials });
      const { state } = await this.call('libvirt.domainGetState', host, existing.name, () =>
        conn.getDomainState(existing),
      );
      if (!isActive(state)) await this.start(conn, existing, host);
      this.log.info('adopting existing domain', { instance: spec.name, host });
      return this.observe({ host, conn, domain: existing, metadata });
    }

    const metadata: InstanceMetadata = {
      installationId: spec.installationId,
      proxy: spec.proxy,
      specHash: spec.specHash,
      createdAt: this.now(),
      port: spec.port === 0 ? this.opts.config.defaultPort : spec.port,
    };
    const seed = buildSeed({
      instance: spec.name,
      proxy: spec.proxy,
      port: metadata.port,
      credentials: spec.credentials,
      createdAt: metadata.createdAt,
    });
    await this.createVolumes(host, spec.name, seed.image, size);
    await this.records.write({ name: spec.name, host, credentials: spec.credentials });
    const config = this.hostConfig(host);
    const chosen = size ? this.opts.config.sizes[size] : undefined;
    const xml = domainXml({
      name: spec.name,
      host: config,
      vcpus: chosen?.vcpus ?? config.vcpus,
      memoryMiB: chosen?.memoryMiB ?? config.memoryMiB,
      metadata,
    });
    const defined = await backendCall('libvirt.domainDefineXML', this.attrs(host, spec.name), () =>
      conn.defineDomain(xml),
    );
    const domain = await this.start(conn, defined, host);
    this.log.info('created domain', { instance: spec.name, host, port: metadata.port });
    return this.observe({ host, conn, domain, metadata });
  }

  /** A fresh overlay and seed: leftovers of an earlier attempt (no domain) are removed first. */
  private async createVolumes(host: string, name: string, image: Buffer, size: string | undefined): Promise<void> {
    const config = this.hostConfig(host);
    const { conn, pool } = await this.storagePool(host);
    const names = volumeNames(name);
    await this.deleteVolumes(conn, pool, host, name);
    const base = await conn.lookupStorageVolByName(pool, config.baseImage).catch((err: unknown) => {
      if (isLibvirtError(err, ErrorCode.NO_STORAGE_VOL))
        throw new RetryableError(
          `base image ${config.baseImage} is not in pool ${config.pool} on host ${host}`,
          60_000,
          { cause: err },
        );
      throw err;
    });
    const [basePath, baseInfo] = await Promise.all([conn.getStorageVolPath(base), conn.getStorageVolInfo(base)]);
    const diskGiB = size ? this.opts.config.sizes[size]?.diskGiB : undefined;
    const wanted = diskGiB === undefined ? 0n : BigInt(diskGiB) * GIB;
    const capacity = wanted > baseInfo.capacity ? wanted : baseInfo.capacity;
    await backendCall('libvirt.storageVolCreateXML', this.attrs(host, name), () =>
      conn.createStorageVol(pool, overlayVolumeXml(names.overlay, capacity, basePath, config.baseImageFormat)),
    );
    const seed = await backendCall('libvirt.storageVolCreateXML', this.attrs(host, name), () =>
      conn.createStorageVol(pool, seedVolumeXml(names.seed, image.length)),
    );
    await backendCall('libvirt.storageVolUpload', { ...this.attrs(host, name), 'libvirt.bytes': image.length }, () =>
      conn.uploadStorageVol(seed, image, { length: BigInt(image.length) }),
    );
  }

  private start(conn: LibvirtConnection, domain: DomainRef, host: string): Promise<DomainRef> {
    return backendCall('libvirt.domainCreate', this.attrs(host, domain.name), () => conn.startDomain(domain));
  }

  async get(name: string): Promise<Instance> {
    const found = await this.find(name);
    if (!found) throw new NotFoundError(`instance ${name} not found`);
    return this.onHost(found.host, () => this.observe(found));
  }

  async delete(name: string): Promise<void> {
    this.assertOpen();
    await this.serial.run(name, async () => {
      // Without a record the instance may be on any host: every host must be cleaned.
      const hosts = await this.hostsOf(name);
      await Promise.all(hosts.map((host) => this.onHost(host, () => this.deleteOn(host, name))));
      await this.records.remove(name);
    });
  }

  private async deleteOn(host: string, name: string): Promise<void> {
    const conn = await this.pool.get(this.hostConfig(host).uri);
    const domain = await this.lookup(host, conn, name);
    if (domain) {
      if (!(await this.metadataOf(host, conn, domain))) {
        this.log.warn('not deleting a domain that is not ours', { instance: name, host });
        return;
      }
      await backendCall('libvirt.domainDestroy', this.attrs(host, name), () =>
        ignoring(conn.destroyDomain(domain), ErrorCode.OPERATION_INVALID, ErrorCode.NO_DOMAIN),
      );
      await backendCall('libvirt.domainUndefine', this.attrs(host, name), () =>
        ignoring(
          conn.undefineDomain(domain, UndefineFlags.MANAGED_SAVE | UndefineFlags.SNAPSHOTS_METADATA),
          ErrorCode.NO_DOMAIN,
        ),
      );
      this.log.info('deleted domain', { instance: name, host });
    }
    const { conn: storage, pool } = await this.storagePool(host);
    await this.deleteVolumes(storage, pool, host, name);
  }

  private async deleteVolumes(
    conn: LibvirtConnection,
    pool: StoragePoolRef,
    host: string,
    name: string,
  ): Promise<void> {
    for (const volume of Object.values(volumeNames(name))) {
      const vol = await ignoring(conn.lookupStorageVolByName(pool, volume), ErrorCode.NO_STORAGE_VOL);
      if (!vol) continue;
      await backendCall('libvirt.storageVolDelete', this.attrs(host, name), () =>
        ignoring(conn.deleteStorageVol(vol), ErrorCode.NO_STORAGE_VOL),
      );
    }
  }

  /** Every domain with our metadata for this installation, on every host; incomplete is an error. */
  async list(): Promise<Instance[]> {
    const hosts = Object.keys(this.opts.config.hosts);
    const settled = await Promise.allSettled(hosts.map((host) => this.onHost(host, () => this.listOn(host))));
    const failed = settled.flatMap((r, i) => (r.status === 'rejected' ? [`${hosts[i]}: ${message(r.reason)}`] : []));
    if (failed.length > 0) throw new RetryableError(`listing is incomplete: ${failed.join('; ')}`, 5000);
    return settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  }

  private async listOn(host: string): Promise<Instance[]> {
    const conn = await this.pool.get(this.hostConfig(host).uri);
    const domains = await this.call('libvirt.connectListAllDomains', host, '', () => conn.listAllDomains());
    const ours = await Promise.all(
      domains.map(async (domain) => {
        // A domain undefined meanwhile is simply not listed.
        const metadata = await ignoring(this.metadataOf(host, conn, domain), ErrorCode.NO_DOMAIN);
        return metadata?.installationId === this.opts.installationId ? { host, conn, domain, metadata } : undefined;
      }),
    );
    const instances = await Promise.all(
      ours.filter((found) => found !== undefined).map((found) => ignoring(this.observe(found), ErrorCode.NO_DOMAIN)),
    );
    return instances.filter((i) => i !== undefined);
  }

  /** Per host: the daemon answers, the pool is active and holds the base image. */
  async check(): Promise<ProviderHealth> {
    const started = performance.now();
    const hosts = Object.keys(this.opts.config.hosts);
    const results = await Promise.all(
      hosts.map(async (host): Promise<[string, { ok: boolean; message: string }]> => {
        try {
          return [host, { ok: true, message: await this.onHost(host, () => this.checkHost(host)) }];
        } catch (err) {
          return [host, { ok: false, message: message(err) }];
        }
      }),
    );
    const detail = Object.fromEntries(results);
    const bad = results.filter(([, r]) => !r.ok);
    return {
      ok: bad.length === 0,
      message:
        bad.length === 0 ? `${hosts.length} host(s) ok` : bad.map(([host, r]) => `${host}: ${r.message}`).join('; '),
      latencyMs: Math.round(performance.now() - started),
      detail,
    };
  }

  private async checkHost(host: string): Promise<string> {
    const config = this.hostConfig(host);
    const daemon = await this.pool.get(config.uri);
    await this.call('libvirt.connectGetLibVersion', host, '', () => daemon.getLibVersion());
    const { conn, pool } = await this.storagePool(host);
    const info = await this.call('libvirt.storagePoolGetInfo', host, '', () => conn.getStoragePoolInfo(pool));
    if (info.state !== StoragePoolState.RUNNING) throw new Error(`pool ${config.pool} is not active`);
    await this.call('libvirt.storageVolLookupByName', host, '', () =>
      conn.lookupStorageVolByName(pool, config.baseImage),
    ).catch((err: unknown) => {
      if (isLibvirtError(err, ErrorCode.NO_STORAGE_VOL))
        throw new Error(`base image ${config.baseImage} is not in pool ${config.pool}`);
      throw err;
    });
    return `pool ${config.pool} active, ${info.available / (1024n * 1024n)} MiB free`;
  }

  async credentials(name: string): Promise<ProxyCredentials | undefined> {
    return (await this.records.read(name))?.credentials;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.serial.idle();
    await this.pool.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new RetryableError(`kvm backend ${this.name} is closed`);
  }

  private hostConfig(host: string): KvmHostConfig {
    const config = this.opts.config.hosts[host];
    if (!config)
      throw new PermanentError(`${JSON.stringify(host)} is not a host of this provider`, 'spec.placement.host');
    return config;
  }

  private attrs(host: string, instance: string) {
    return { 'kvm.host': host, 'kvm.instance': instance };
  }

  /** The host's storage pool, on its storage endpoint. */
  private async storagePool(host: string): Promise<{ conn: LibvirtConnection; pool: StoragePoolRef }> {
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

  /**
   * Where the instance is: its record names the host; without one every host is asked.
   * @returns undefined only when every host asked answered that it has no such domain of ours
   */
  private async find(name: string): Promise<Found | undefined> {
    const hosts = await this.hostsOf(name);
    const answers = await Promise.allSettled(
      hosts.map((host) =>
        this.onHost(host, async (): Promise<Found | undefined> => {
          const conn = await this.pool.get(this.hostConfig(host).uri);
          const domain = await this.lookup(host, conn, name);
          const metadata = domain ? await this.metadataOf(host, conn, domain) : undefined;
          return domain && metadata ? { host, conn, domain, metadata } : undefined;
        }),
      ),
    );
    for (const answer of answers) if (answer.status === 'fulfilled' && answer.value) return answer.value;
    const failure = answers.find((a) => a.status === 'rejected');
    if (failure) throw failure.reason;
    return undefined;
  }

  /** The host the instance's record names, or every host when there is no record (or its host was removed). */
  private async hostsOf(name: string): Promise<string[]> {
    const host = (await this.records.read(name))?.host;
    const hosts = Object.keys(this.opts.config.hosts);
    return host !== undefined && hosts.includes(host) ? [host] : hosts;
  }

  private lookup(host: string, conn: LibvirtConnection, name: string): Promise<DomainRef | undefined> {
    return this.call('libvirt.domainLookupByName', host, name, () =>
      ignoring(conn.lookupDomainByName(name), ErrorCode.NO_DOMAIN),
    );
  }

  /** One libvirt call in a `libvirt.<procedure>` span (a child of whatever the relay is doing). */
  private call<T>(span: string, host: string, instance: string, fn: () => Promise<T>): Promise<T> {
    return backendCall(span, instance ? this.attrs(host, instance) : { 'kvm.host': host }, fn);
  }

  /** Our metadata element, or undefined when the domain has none (not ours) or an unreadable one. */
  private async metadataOf(
    host: string,
    conn: LibvirtConnection,
    domain: DomainRef,
  ): Promise<InstanceMetadata | undefined> {
    const xml = await this.call('libvirt.domainGetMetadata', host, domain.name, () =>
      ignoring(conn.getDomainMetadata(domain, MetadataType.ELEMENT, METADATA_NS), ErrorCode.NO_DOMAIN_METADATA),
    );
    return xml === undefined ? undefined : parseMetadata(xml);
  }

  private async observe(found: Found): Promise<Instance> {
    const { host, conn, domain, metadata } = found;
    const { state } = await this.call('libvirt.domainGetState', host, domain.name, () => conn.getDomainState(domain));
    const address = isActive(state)
      ? await firstAddress((source) =>
          this.call('libvirt.domainInterfaceAddresses', host, domain.name, () =>
            conn.getInterfaceAddresses(domain, source),
          ),
        )
      : undefined;
    const booting = address !== undefined && !(await this.signalledReady(found));
    return {
      name: domain.name,
      proxy: metadata.proxy,
      installationId: metadata.installationId,
      specHash: metadata.specHash,
      state: booting ? 'Pending' : instanceState(state, address !== undefined),
      ip: address?.ip ?? '',
      port: metadata.port,
      createdAt: metadata.createdAt,
    };
  }

  /**
   * With `readySignal: agent`, whether the guest said its proxy serves; remembered per domain
   * incarnation, so a ready guest costs no agent call. Past the startup grace a silent guest counts
   * as ready: the probes judge it (and fail it, when its proxy never came up).
   */
  private async signalledReady(found: Found): Promise<boolean> {
    const { host, conn, domain, metadata } = found;
    if (this.hostConfig(host).readySignal === 'none') return true;
    const key = `${host}/${Buffer.from(domain.uuid).toString('hex')}/${metadata.createdAt}`;
    if (this.ready.has(key)) return true;
    const said = await backendCall('libvirt.qemuDomainAgentCommand', this.attrs(host, domain.name), () =>
      guestSaysReady(conn, domain, { instance: domain.name, port: metadata.port }),
    );
    if (said) {
      this.ready.add(key);
      this.log.info('guest says its proxy serves', { instance: domain.name, host });
      return true;
    }
    return this.now() - metadata.createdAt >= this.startupGraceMs;
  }

  /**
   * Runs work against one host, turning what the libvirt client throws into the contract's typed
   * errors: a connection that cannot be dialled, is lost or times out is Retryable (the pool dials
   * again on the next call); libvirt's own errors are Retryable too, unless already typed.
   */
  private async onHost<T>(host: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (err instanceof EgressError) throw err;
      if (err instanceof DialError) throw new RetryableError(`host ${host}: ${err.message}`, 5000, { cause: err });
      throw new RetryableError(`host ${host}: ${message(err)}`, 2000, { cause: err });
    }
  }
}

/** Resolves to undefined instead of rejecting when libvirt answers with one of `codes`. */
async function ignoring<T>(call: Promise<T>, ...codes: number[]): Promise<T | undefined> {
  try {
    return await call;
  } catch (err) {
    if (codes.length > 0 && isLibvirtError(err, ...codes)) return undefined;
    throw err;
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/**
 * Creates a kvm backend. Nothing is dialled until the first call.
 *
 * @example
 * const backend = createKvmBackend({ config: relayConfig.backends[1], installationId: 'prod', logger });
 */
export function createKvmBackend(opts: KvmBackendOptions): RelayBackend {
  return new KvmBackend(opts);
}
