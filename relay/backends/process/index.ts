/** The `process` backend: each proxy instance is a detached OS process on the relay's own host. */
import { access, constants, mkdir, realpath, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { NotFoundError, PermanentError, RetryableError, ValidationError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type { Instance, InstanceSpec, InstanceState, ProviderHealth } from '../../../shared/providers/contract.js';
import { backendCall } from '../../../shared/telemetry/spans.js';
import { KeyedSerializer } from '../../keyed-serializer.js';
import { parseCreateSpec, type ProxyCredentials, type RelayBackend } from '../backend.js';
import { cursorPath, EgressAllocator, parseIpv4Range } from './egress.js';
import { PortAllocator } from './ports.js';
import { awaitExit, findByMarkers, isOurs, PortInUseError, spawnProxy, terminate } from './processes.js';
import { egressAddress, markerArgs } from './proxy-config.js';
import { StateStore, type InstanceRecord, type ReadResult } from './state.js';

export { stopAllInstances } from './stop-all.js';

/** How a process backend is set up (one per configured `process` provider on a relay). */
export interface ProcessBackendOptions {
  /** The provider name this backend serves. */
  provider: string;
  /** This installation's id: `list` returns only instances carrying it. */
  installationId: string;
  /**
   * Where instance state (`instances/<name>.json`, mode 0600) and logs (`logs/<name>.log`) live.
   * Several process backends may share one directory: records carry their provider, and ports are
   * allocated across all of them.
   */
  stateDir: string;
  /** Addresses a proxy may listen on; the first is the default placement. */
  bindAddresses: readonly string[];
  /** Inclusive port range for proxies. */
  portRange: readonly [number, number];
  /** The built JavaScript of `proxy-server.ts`. */
  proxyServerPath: string;
  /** The IP reported to clients and the prober; defaults to the bind address. */
  advertiseHost?: string | undefined;
  /**
   * An IPv4 range (`127.1.0.0/16`) each proxy takes its own outgoing source address from, so each
   * has an egress IP of its own; absent: a routable bind address is the source, else the OS picks.
   */
  egressAddresses?: string | undefined;
  logger: Logger;
  /** How long a new process may take to print its ready line (default 10 s). */
  startTimeoutMs?: number;
}

const MAX_START_ATTEMPTS = 3;

class ProcessBackend implements RelayBackend {
  readonly type = 'process';
  readonly probesRemotely = true;
  readonly name: string;
  private readonly serial = new KeyedSerializer();
  /** Instances whose process is starting (reported Pending until its ready line). */
  private readonly starting = new Set<string>();
  private readonly ports: PortAllocator;
  private readonly egress: EgressAllocator | undefined;
  private readonly log: Logger;
  private readonly reportedCorrupt = new Set<string>();
  private store: Promise<StateStore> | undefined;
  private closed = false;

  constructor(private readonly opts: ProcessBackendOptions) {
    this.name = opts.provider;
    this.ports = new PortAllocator(opts.portRange);
    if (opts.egressAddresses !== undefined) {
      const range = parseIpv4Range(opts.egressAddresses);
      if (typeof range === 'string') throw new ValidationError('egressAddresses', range);
      this.egress = new EgressAllocator(range, cursorPath(path.resolve(opts.stateDir), opts.provider));
    }
    this.log = opts.logger.child({ provider: opts.provider, backend: 'process' });
  }

  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    for (const key of Object.keys(placement)) {
      if (key !== 'bindAddress')
        throw new ValidationError(`spec.placement.${key}`, 'unknown key for a process provider (allowed: bindAddress)');
    }
    const value = placement['bindAddress'] ?? this.opts.bindAddresses[0];
    if (typeof value !== 'string' || !this.opts.bindAddresses.includes(value)) {
      throw new ValidationError(
        'spec.placement.bindAddress',
        `${JSON.stringify(value)} is not a bind address of this relay (allowed: ${this.opts.bindAddresses.join(', ')})`,
      );
    }
    return { bindAddress: value };
  }

  async create(input: InstanceSpec): Promise<Instance> {
    this.assertOpen();
    const { spec, placement } = parseCreateSpec(input, (p) => this.resolvePlacement(p));
    const host = String(placement['bindAddress']);
    return this.serial.run(spec.name, () => this.createLocked(spec, host));
  }

  private async createLocked(spec: InstanceSpec, host: string): Promise<Instance> {
    const store = await this.state();
    const markers = markerArgs(spec.name, store.root);
    const existing = await store.read(spec.name);
    if (existing.kind === 'ok' && existing.record.provider !== this.name) {
      throw new PermanentError(
        `instance name is already used by provider ${existing.record.provider} on this host`,
        'spec.name',
      );
    }
    if (existing.kind === 'ok' && (await isOurs(existing.record.pid, markers))) {
      this.log.info('adopting running instance', { instance: spec.name, pid: existing.record.pid });
      return this.toInstance(existing.record, 'Running');
    }
    this.starting.add(spec.name);
    try {
      return await this.startLocked(spec, host, store, markers, existing);
    } finally {
      this.starting.delete(spec.name);
    }
  }

  private async startLocked(
    spec: InstanceSpec,
    host: string,
    store: StateStore,
    markers: [string, string],
    existing: ReadResult,
  ): Promise<Instance> {
    // No live process on record: make sure no unrecorded one of this name is left behind.
    for (const pid of await findByMarkers(markers)) await terminate(pid, markers);
    // A process killed out of band may still be exiting, holding the port it is restarted on.
    if (existing.kind === 'ok') await awaitExit(existing.record.pid, markers);
    const preferred = existing.kind === 'ok' ? existing.record.port : undefined;
    const exclude = new Set<number>();
    // Its own source address: kept by a restarted instance, fresh for a new one.
    const source = await this.egress?.reserve(
      () => this.takenEgress(store, spec.name),
      existing.kind === 'ok' ? existing.record.egressAddress : undefined,
    );
    try {
      return await this.startOn(spec, host, store, markers, preferred, exclude, source);
    } finally {
      if (source !== undefined) this.egress?.release(source);
    }
  }

  private async startOn(
    spec: InstanceSpec,
    host: string,
    store: StateStore,
    markers: [string, string],
    preferred: number | undefined,
    exclude: Set<number>,
    source: string | undefined,
  ): Promise<Instance> {
    for (let attempt = 1; ; attempt++) {
      const port = await this.ports.reserve({
        host,
        requested: spec.port,
        preferred,
        exclude,
        taken: () => this.takenPorts(store, spec.name),
      });
      const record: InstanceRecord = {
        name: spec.name,
        provider: this.name,
        proxy: spec.proxy,
        installationId: spec.installationId,
        specHash: spec.specHash,
        host,
        port,
        pid: 1,
        createdAt: Date.now(),
        credentials: spec.credentials,
        ...(source !== undefined ? { egressAddress: source } : {}),
      };
      try {
        const localAddress = source ?? egressAddress(host);
        const pid = await backendCall(
          'process.spawn',
          { 'process.instance': spec.name, 'server.address': host, 'server.port': port },
          () =>
            spawnProxy(
              {
                proxyServerPath: this.opts.proxyServerPath,
                markers,
                config: { name: spec.name, host, port, ...spec.credentials, ...(localAddress ? { localAddress } : {}) },
                logPath: store.logPath(spec.name),
                timeoutMs: this.opts.startTimeoutMs ?? 10_000,
              },
              (pid) => store.write({ ...record, pid }),
            ),
        );
        this.log.info('started proxy process', { instance: spec.name, pid, host, port, egressAddress: source });
        return this.toInstance({ ...record, pid }, 'Running');
      } catch (err) {
        await store.removeRecord(spec.name);
        if (err instanceof PortInUseError && spec.port === 0 && attempt < MAX_START_ATTEMPTS) {
          exclude.add(port);
          continue;
        }
        if (err instanceof PortInUseError)
          throw new PermanentError(`port ${port} is in use on ${host}`, 'spec.port', { cause: err });
        throw err;
      } finally {
        this.ports.release(port);
      }
    }
  }

  async get(name: string): Promise<Instance> {
    const store = await this.state();
    const result = await store.read(name);
    if (result.kind === 'missing' || (result.kind === 'ok' && result.record.provider !== this.name)) {
      throw new NotFoundError(`instance ${name} not found`);
    }
    if (result.kind === 'corrupt') throw new PermanentError(`state of instance ${name} is unreadable: ${result.error}`);
    return this.observe(store, result.record);
  }

  async delete(name: string): Promise<void> {
    this.assertOpen();
    await this.serial.run(name, async () => {
      const store = await this.state();
      const markers = markerArgs(name, store.root);
      const result = await store.read(name);
      if (result.kind === 'ok' && result.record.provider !== this.name) return;
      await backendCall('process.terminate', { 'process.instance': name }, async () => {
        if (result.kind === 'ok' && (await terminate(result.record.pid, markers))) {
          this.log.info('stopped proxy process', { instance: name, pid: result.record.pid });
        }
        // A process whose state was lost or corrupted still carries the markers.
        for (const pid of await findByMarkers(markers)) await terminate(pid, markers);
      });
      await store.remove(name);
    });
  }

  async list(): Promise<Instance[]> {
    const store = await this.state();
    const instances: Instance[] = [];
    for (const { name, result } of await store.readAll()) {
      if (result.kind === 'corrupt') {
        const key = `${name}: ${result.error}`;
        if (!this.reportedCorrupt.has(key))
          this.log.warn('skipping unreadable instance state', { instance: name, error: result.error });
        this.reportedCorrupt.add(key);
      } else if (
        result.kind === 'ok' &&
        result.record.provider === this.name &&
        result.record.installationId === this.opts.installationId
      ) {
        instances.push(await this.observe(store, result.record));
      }
    }
    return instances;
  }

  async check(): Promise<ProviderHealth> {
    const started = performance.now();
    const health = (ok: boolean, message: string): ProviderHealth => ({
      ok,
      message,
      latencyMs: Math.round(performance.now() - started),
    });
    const [lo, hi] = this.opts.portRange;
    if (!(Number.isInteger(lo) && Number.isInteger(hi) && lo >= 1 && lo <= hi && hi <= 65535)) {
      return health(false, `port range ${lo}-${hi} is not a valid range`);
    }
    try {
      const store = await this.state();
      const probe = path.join(store.root, `.check-${process.pid}`);
      await writeFile(probe, 'ok');
      await rm(probe, { force: true });
      await access(this.opts.proxyServerPath, constants.R_OK);
      return health(true, `state in ${store.root}, ports ${lo}-${hi}`);
    } catch (err) {
      return health(false, err instanceof Error ? err.message : String(err));
    }
  }

  async credentials(name: string): Promise<ProxyCredentials | undefined> {
    const result = await (await this.state()).read(name);
    return result.kind === 'ok' && result.record.provider === this.name ? result.record.credentials : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.serial.idle();
  }

  private assertOpen(): void {
    if (this.closed) throw new RetryableError(`process backend ${this.name} is closed`);
  }

  /** The resolved state directory, created on first use; a failure is retried on the next call. */
  private state(): Promise<StateStore> {
    this.store ??= (async () => {
      const dir = path.resolve(this.opts.stateDir);
      await mkdir(dir, { recursive: true, mode: 0o700 });
      const store = new StateStore(await realpath(dir));
      await store.init();
      return store;
    })().catch((err: unknown) => {
      this.store = undefined;
      throw new RetryableError(`state directory ${this.opts.stateDir} is not usable: ${String(err)}`, 5000, {
        cause: err,
      });
    });
    return this.store;
  }

  private async takenPorts(store: StateStore, self: string): Promise<Map<number, string>> {
    const taken = new Map<number, string>();
    for (const { name, result } of await store.readAll()) {
      if (name !== self && result.kind === 'ok') taken.set(result.record.port, name);
    }
    return taken;
  }

  private async takenEgress(store: StateStore, self: string): Promise<Set<string>> {
    const taken = new Set<string>();
    for (const { name, result } of await store.readAll()) {
      if (name !== self && result.kind === 'ok' && result.record.egressAddress) taken.add(result.record.egressAddress);
    }
    return taken;
  }

  /** Running only when the recorded pid is alive and carries our markers (not a recycled pid). */
  private async observe(store: StateStore, record: InstanceRecord): Promise<Instance> {
    // A process that has not printed its ready line yet may still fail to start.
    if (this.starting.has(record.name)) return this.toInstance(record, 'Pending');
    const alive = await isOurs(record.pid, markerArgs(record.name, store.root));
    return this.toInstance(record, alive ? 'Running' : 'Terminated');
  }

  private toInstance(record: InstanceRecord, state: InstanceState): Instance {
    return {
      name: record.name,
      proxy: record.proxy,
      installationId: record.installationId,
      specHash: record.specHash,
      state,
      ip: this.opts.advertiseHost ?? record.host,
      port: record.port,
      createdAt: record.createdAt,
    };
  }
}

/**
 * Creates a process backend. Nothing touches the disk until the first call.
 *
 * @example
 * const backend = createProcessBackend({ provider: 'local', installationId: 'local',
 *   stateDir: '.egress/relay-state', bindAddresses: ['127.0.0.1'], portRange: [20000, 20999],
 *   proxyServerPath: '/app/dist/relay/proxy-server.js', logger });
 */
export function createProcessBackend(opts: ProcessBackendOptions): RelayBackend {
  return new ProcessBackend(opts);
}
