/**
 * The `kvm` backend: each proxy instance is a libvirt domain on one of the configured hosts,
 * booting a qcow2 overlay of the host's base image with a NoCloud seed that installs and
 * configures tinyproxy. Ownership is the domain's metadata element (`domain-xml.ts`); the relay
 * keeps only the host and the credentials of each instance (`records.ts`). Host access is
 * `hosts.ts`, volumes `volumes.ts`, the view of a domain `instance-view.ts`, health `health.ts`.
 */
import { NotFoundError, PermanentError, RetryableError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { Credentials, Instance, InstanceSpec, ProviderHealth } from '../../../shared/providers/contract.js';
import { backendCall } from '../../../shared/telemetry/spans.js';
import { KeyedSerializer } from '../../keyed-serializer.js';
import { ErrorCode, UndefineFlags, type DomainRef, type LibvirtConnection } from '../../libvirt/index.js';
import { parseCreateSpec, type RelayBackend } from '../backend.js';
import { domainXml, type InstanceMetadata } from './domain-xml.js';
import { checkHosts } from './health.js';
import { attrs, ignoring, KvmHosts, message, type Found } from './hosts.js';
import { InstanceViewer } from './instance-view.js';
import { isActive } from './observe.js';
import type { KvmBackendConfig } from './options.js';
import { resolveKvmPlacement } from './placement.js';
import { RecordStore } from './records.js';
import { buildSeed } from './seed.js';
import { createVolumes, deleteVolumes } from './volumes.js';

export { kvmBackendSchema, kvmHostSchema, type KvmBackendConfig } from './options.js';

/** How a kvm backend is set up (one per configured `kvm` provider on a relay). */
export interface KvmBackendOptions {
  config: KvmBackendConfig;
  /** This installation's id: `list` returns only domains carrying it. */
  installationId: string;
  logger: Logger;
  now?: () => number;
}

class KvmBackend implements RelayBackend {
  readonly type = 'kvm';
  readonly probesRemotely = true;
  readonly name: string;
  readonly startupGraceMs: number;
  private readonly serial = new KeyedSerializer();
  private readonly hosts: KvmHosts;
  private readonly viewer: InstanceViewer;
  private readonly records: RecordStore;
  private readonly log: Logger;
  private readonly now: () => number;
  private closed = false;

  constructor(private readonly opts: KvmBackendOptions) {
    const { config } = opts;
    this.name = config.provider;
    this.log = opts.logger.child({ provider: config.provider, backend: 'kvm' });
    this.now = opts.now ?? Date.now;
    this.startupGraceMs = config.startupGraceSeconds * 1000;
    this.records = new RecordStore(config.stateDir, config.provider);
    this.hosts = new KvmHosts(config, this.log);
    this.viewer = new InstanceViewer(this.hosts, {
      logger: this.log,
      now: this.now,
      startupGraceMs: this.startupGraceMs,
    });
  }

  /** Placement keys: `host` (required when the provider has several) and `size` (a configured size). */
  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    return resolveKvmPlacement(this.opts.config, placement);
  }

  async create(input: InstanceSpec): Promise<Instance> {
    this.assertOpen();
    const { spec, placement } = parseCreateSpec(input, (p) => this.resolvePlacement(p));
    const host = String(placement['host']);
    const size = typeof placement['size'] === 'string' ? placement['size'] : undefined;
    return this.serial.run(spec.name, () =>
      this.hosts.onHost(host, async () => {
        const conn = await this.hosts.connection(host);
        const existing = await this.hosts.lookup(host, conn, spec.name);
        if (existing) return this.adopt(spec, host, conn, existing);
        return this.createNew(spec, host, conn, size);
      }),
    );
  }

  /** A domain of this name exists: ours (this installation's) is started if needed and kept. */
  private async adopt(spec: InstanceSpec, host: string, conn: LibvirtConnection, existing: DomainRef) {
    const metadata = await this.hosts.metadataOf(host, conn, existing);
    if (!metadata || metadata.installationId !== spec.installationId)
      throw new PermanentError(
        `a domain named ${spec.name} exists on host ${host} and is not this instance`,
        'spec.name',
      );
    await this.records.write({ name: spec.name, host, credentials: spec.credentials });
    const { state } = await this.hosts.call('libvirt.domainGetState', host, existing.name, () =>
      conn.getDomainState(existing),
    );
    if (!isActive(state)) await this.start(conn, existing, host);
    this.log.info('adopting existing domain', { instance: spec.name, host });
    return this.viewer.observe({ host, conn, domain: existing, metadata });
  }

  private async createNew(
    spec: InstanceSpec,
    host: string,
    conn: LibvirtConnection,
    size: string | undefined,
  ): Promise<Instance> {
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
      egress: this.opts.config.egress,
      createdAt: metadata.createdAt,
    });
    await createVolumes(this.hosts, this.opts.config, { host, name: spec.name, size }, seed.image);
    await this.records.write({ name: spec.name, host, credentials: spec.credentials });
    const config = this.hosts.hostConfig(host);
    const chosen = size ? this.opts.config.sizes[size] : undefined;
    const xml = domainXml({
      name: spec.name,
      host: config,
      vcpus: chosen?.vcpus ?? config.vcpus,
      memoryMiB: chosen?.memoryMiB ?? config.memoryMiB,
      metadata,
    });
    const defined = await backendCall('libvirt.domainDefineXML', attrs(host, spec.name), () => conn.defineDomain(xml));
    const domain = await this.start(conn, defined, host);
    this.log.info('created domain', { instance: spec.name, host, port: metadata.port });
    return this.viewer.observe({ host, conn, domain, metadata });
  }

  private start(conn: LibvirtConnection, domain: DomainRef, host: string): Promise<DomainRef> {
    return backendCall('libvirt.domainCreate', attrs(host, domain.name), () => conn.startDomain(domain));
  }

  async get(name: string): Promise<Instance> {
    const found = await this.find(name);
    if (!found) throw new NotFoundError(`instance ${name} not found`);
    return this.hosts.onHost(found.host, () => this.viewer.observe(found));
  }

  async delete(name: string): Promise<void> {
    this.assertOpen();
    await this.serial.run(name, async () => {
      // Without a record the instance may be on any host: every host must be cleaned.
      const hosts = await this.hostsOf(name);
      await Promise.all(hosts.map((host) => this.hosts.onHost(host, () => this.deleteOn(host, name))));
      await this.records.remove(name);
    });
  }

  private async deleteOn(host: string, name: string): Promise<void> {
    const conn = await this.hosts.connection(host);
    const domain = await this.hosts.lookup(host, conn, name);
    if (domain) {
      if (!(await this.hosts.metadataOf(host, conn, domain))) {
        this.log.warn('not deleting a domain that is not ours', { instance: name, host });
        return;
      }
      await backendCall('libvirt.domainDestroy', attrs(host, name), () =>
        ignoring(conn.destroyDomain(domain), ErrorCode.OPERATION_INVALID, ErrorCode.NO_DOMAIN),
      );
      await backendCall('libvirt.domainUndefine', attrs(host, name), () =>
        ignoring(
          conn.undefineDomain(domain, UndefineFlags.MANAGED_SAVE | UndefineFlags.SNAPSHOTS_METADATA),
          ErrorCode.NO_DOMAIN,
        ),
      );
      this.log.info('deleted domain', { instance: name, host });
    }
    const { conn: storage, pool } = await this.hosts.storagePool(host);
    await deleteVolumes(storage, pool, host, name);
  }

  /** Every domain with our metadata for this installation, on every host; incomplete is an error. */
  async list(): Promise<Instance[]> {
    const hosts = this.hosts.names();
    const settled = await Promise.allSettled(hosts.map((host) => this.hosts.onHost(host, () => this.listOn(host))));
    const failed = settled.flatMap((r, i) => (r.status === 'rejected' ? [`${hosts[i]}: ${message(r.reason)}`] : []));
    if (failed.length > 0) throw new RetryableError(`listing is incomplete: ${failed.join('; ')}`, 5000);
    return settled.flatMap((r) => (r.status === 'fulfilled' ? r.value : []));
  }

  private async listOn(host: string): Promise<Instance[]> {
    const conn = await this.hosts.connection(host);
    const domains = await this.hosts.call('libvirt.connectListAllDomains', host, '', () => conn.listAllDomains());
    const ours = await Promise.all(
      domains.map(async (domain) => {
        // A domain undefined meanwhile is simply not listed.
        const metadata = await ignoring(this.hosts.metadataOf(host, conn, domain), ErrorCode.NO_DOMAIN);
        return metadata?.installationId === this.opts.installationId ? { host, conn, domain, metadata } : undefined;
      }),
    );
    const instances = await Promise.all(
      ours
        .filter((found) => found !== undefined)
        .map((found) => ignoring(this.viewer.observe(found), ErrorCode.NO_DOMAIN)),
    );
    return instances.filter((i) => i !== undefined);
  }

  /** Per host: the daemon answers, the pool is active and holds the base image. */
  check(): Promise<ProviderHealth> {
    return checkHosts(this.hosts);
  }

  async credentials(name: string): Promise<Credentials | undefined> {
    return (await this.records.read(name))?.credentials;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.serial.idle();
    await this.hosts.close();
  }

  private assertOpen(): void {
    if (this.closed) throw new RetryableError(`kvm backend ${this.name} is closed`);
  }

  /**
   * Where the instance is: its record names the host; without one every host is asked.
   * @returns undefined only when every host asked answered that it has no such domain of ours
   */
  private async find(name: string): Promise<Found | undefined> {
    const hosts = await this.hostsOf(name);
    const answers = await Promise.allSettled(
      hosts.map((host) => this.hosts.onHost(host, () => this.hosts.findOn(host, name))),
    );
    for (const answer of answers) if (answer.status === 'fulfilled' && answer.value) return answer.value;
    const failure = answers.find((a) => a.status === 'rejected');
    if (failure) throw failure.reason;
    return undefined;
  }

  /** The host the instance's record names, or every host when there is no record (or its host was removed). */
  private async hostsOf(name: string): Promise<string[]> {
    const host = (await this.records.read(name))?.host;
    const hosts = this.hosts.names();
    return host !== undefined && hosts.includes(host) ? [host] : hosts;
  }
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
