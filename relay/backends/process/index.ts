/** The `process` backend: each proxy instance is a detached tinyproxy process on the relay's own host, behind a stunnel TLS listener. */
import { mkdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { NotFoundError, PermanentError, RetryableError, ValidationError } from '../../../shared/errors.js';
import type { Logger } from '../../../shared/logger.js';
import type {
  Credentials,
  Instance,
  InstanceSpec,
  InstanceState,
  ProviderHealth,
} from '../../../shared/providers/contract.js';
import { backendCall } from '../../../shared/telemetry/spans.js';
import { KeyedSerializer } from '../../keyed-serializer.js';
import { parseCreateSpec, type RelayBackend } from '../backend.js';
import { cursorPath, EgressAllocator, forwarderHost, isLoopback, parseIpv4Range } from './egress.js';
import { fenceTable, loadFence } from './fence.js';
import { Forwarder } from './forwarder.js';
import { checkHealth, executables, resolveBindAddress, startTimeoutMs, type ProcessBackendOptions } from './options.js';
import { PortAllocator } from './ports.js';
import { awaitExit, findByMarkers, isOurs, LeftoverProcesses, terminate } from './processes.js';
import { egressAddress, markerArgs } from './proxy-config.js';
import { newInstanceRecord, StateStore, type InstanceRecord, type ReadResult } from './state.js';
import { PortInUseError, spawnTinyproxy, tinyproxyConfig } from './tinyproxy.js';
import { startTlsListener, tlsMarkers } from './tls-listener.js';

export { processBackendSchema, type ProcessBackendConfig, type ProcessBackendOptions } from './options.js';
export { stopAllInstances } from './stop-all.js';

const MAX_START_ATTEMPTS = 3;

class ProcessBackend implements RelayBackend {
  readonly type = 'process';
  readonly probesRemotely = true;
  readonly name: string;
  private readonly serial = new KeyedSerializer();
  /** Instances whose process is starting (reported Pending until it listens). */
  private readonly starting = new Set<string>();
  private readonly ports: PortAllocator;
  private readonly egress: EgressAllocator | undefined;
  /** Carries what proxies with loopback egress addresses cannot reach themselves. */
  private readonly forwarder: Forwarder | undefined;
  private readonly log: Logger;
  private readonly reportedCorrupt = new Set<string>();
  private store: Promise<StateStore> | undefined;
  private fenced: Promise<void> | undefined;
  private leftovers: LeftoverProcesses | undefined;
  private closed = false;

  constructor(private readonly opts: ProcessBackendOptions) {
    this.name = opts.provider;
    this.ports = new PortAllocator(opts.portRange);
    this.log = opts.logger.child({ provider: opts.provider, backend: 'process' });
    const range = opts.egressAddresses === undefined ? undefined : parseIpv4Range(opts.egressAddresses);
    if (typeof range === 'string') throw new ValidationError('egressAddresses', range);
    if (range === undefined) return;
    this.egress = new EgressAllocator(range, cursorPath(path.resolve(opts.stateDir), opts.provider));
    if (isLoopback(range)) {
      this.forwarder = new Forwarder({
        provider: opts.provider,
        listen: { host: forwarderHost(range), port: opts.portRange[0] },
        tinyproxyPath: executables(opts).tinyproxy,
        timeoutMs: startTimeoutMs(opts),
        egress: opts.egress,
        runAs: opts.runAs,
        logger: this.log,
      });
    }
  }

  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    return resolveBindAddress(placement, this.opts.bindAddresses);
  }

  async create(input: InstanceSpec): Promise<Instance> {
    this.assertOpen();
    const { spec, placement } = parseCreateSpec(input, (p) => this.resolvePlacement(p));
    const host = String(placement['bindAddress']);
    return this.serial.run(spec.name, () => this.createLocked(spec, host));
  }

  private async createLocked(spec: InstanceSpec, host: string): Promise<Instance> {
    const store = await this.state();
    // No proxy without its fence: loaded once, before the first process of this run starts.
    await this.fence();
    // No proxy without its way out: the forwarder is healed first, or the create fails.
    await this.forwarder?.ensure(store);
    const markers = markerArgs(spec.name, store.root);
    const existing = await store.read(spec.name);
    if (existing.kind === 'ok' && existing.record.provider !== this.name) {
      throw new PermanentError(
        `instance name is already used by provider ${existing.record.provider} on this host`,
        'spec.name',
      );
    }
    if (existing.kind === 'ok' && (await this.alive(existing.record, store))) {
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
    // No live process on record: make sure no unrecorded one of this name is left behind (a
    // corrupt record's process, or one of an earlier run whose state file was lost).
    this.leftovers ??= new LeftoverProcesses(markers[1]);
    const tls = tlsMarkers(spec.name, store.root);
    for (const marks of [markers, tls]) {
      const unrecorded = existing.kind === 'corrupt' ? findByMarkers(marks) : this.leftovers.take(marks[0]);
      for (const pid of await unrecorded) await terminate(pid, marks);
    }
    if (existing.kind === 'ok') {
      // The half of an instance still running (its proxy or its TLS listener) goes: both start again.
      await terminate(existing.record.pid, markers);
      if (existing.record.tlsPid !== undefined) await terminate(existing.record.tlsPid, tls);
      // A process killed out of band may still be exiting, holding the port it is restarted on.
      await awaitExit(existing.record.pid, markers);
    }
    const preferred = existing.kind === 'ok' ? { port: existing.record.port, tls: existing.record.tlsPort } : {};
    const exclude = new Set<number>();
    // Its own source address: kept by a restarted instance, fresh for a new one.
    const source = await this.egress?.reserve(
      async () => (await store.takenBy(spec.name)).egress,
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
    preferred: { port?: number | undefined; tls?: number | undefined },
    exclude: Set<number>,
    source: string | undefined,
  ): Promise<Instance> {
    for (let attempt = 1; ; attempt++) {
      const port = await this.ports.reserve({
        host,
        requested: spec.port,
        preferred: preferred.port,
        exclude,
        taken: async () => (await store.takenBy(spec.name)).ports,
      });
      const record = newInstanceRecord(spec, this.name, { host, port, source });
      let pid: number | undefined;
      try {
        const config = tinyproxyConfig({
          host,
          port,
          credentials: spec.credentials,
          source: source ?? egressAddress(host),
          upstream: this.forwarder?.address,
          egress: this.opts.egress,
        });
        pid = await backendCall(
          'process.spawn',
          { 'process.instance': spec.name, 'server.address': host, 'server.port': port },
          () =>
            spawnTinyproxy(
              {
                program: executables(this.opts).tinyproxy,
                markers,
                config,
                listen: { host, port },
                configPath: store.confPath(spec.name),
                logPath: store.logPath(spec.name),
                timeoutMs: startTimeoutMs(this.opts),
                runAs: this.opts.runAs,
              },
              (spawned) => store.write({ ...record, pid: spawned }),
            ),
        );
        this.log.info('started proxy process', { instance: spec.name, pid, host, port, egressAddress: source });
        const started = await this.startTls({ ...record, pid }, store, preferred.tls, new Set([...exclude, port]));
        return this.toInstance(started, 'Running');
      } catch (err) {
        // No proxy without its TLS listener: one whose listener failed is stopped.
        if (pid !== undefined) await terminate(pid, markers);
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

  /**
   * Starts the TLS listener of a started proxy on a port of its own (the one it had, for a
   * restarted instance) and records it.
   *
   * @returns the record with the listener
   */
  private async startTls(
    record: InstanceRecord,
    store: StateStore,
    preferred: number | undefined,
    exclude: Set<number>,
  ): Promise<InstanceRecord> {
    const { name, host } = record;
    const tlsPort = await this.ports.reserve({
      host,
      requested: 0,
      preferred,
      exclude,
      taken: async () => (await store.takenBy(name)).ports,
    });
    try {
      const withPort = { ...record, tlsPort };
      const tlsPid = await backendCall(
        'process.spawn',
        { 'process.instance': name, 'server.address': host, 'server.port': tlsPort },
        () =>
          startTlsListener(
            {
              name,
              store,
              listen: { host, port: tlsPort },
              proxy: { host, port: record.port },
              stunnelPath: executables(this.opts).stunnel,
              timeoutMs: startTimeoutMs(this.opts),
              runAs: this.opts.runAs,
            },
            (spawned) => store.write({ ...withPort, tlsPid: spawned }),
          ),
      );
      this.log.info('started TLS listener', { instance: name, pid: tlsPid, host, port: tlsPort });
      return { ...withPort, tlsPid };
    } finally {
      this.ports.release(tlsPort);
    }
  }

  /** Whether the instance's processes run: its proxy, and its TLS listener when it has one. */
  private async alive(record: InstanceRecord, store: StateStore): Promise<boolean> {
    if (!(await isOurs(record.pid, markerArgs(record.name, store.root)))) return false;
    return record.tlsPid === undefined || isOurs(record.tlsPid, tlsMarkers(record.name, store.root));
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
      const tls = tlsMarkers(name, store.root);
      await backendCall('process.terminate', { 'process.instance': name }, async () => {
        if (result.kind === 'ok' && (await terminate(result.record.pid, markers))) {
          this.log.info('stopped proxy process', { instance: name, pid: result.record.pid });
        }
        if (result.kind === 'ok' && result.record.tlsPid !== undefined) await terminate(result.record.tlsPid, tls);
        // A process whose state was lost or corrupted still carries the markers.
        for (const marks of [markers, tls]) for (const pid of await findByMarkers(marks)) await terminate(pid, marks);
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
    return checkHealth(
      this.opts,
      () => this.state(),
      this.forwarder,
      () => this.fence(),
    );
  }

  async credentials(name: string): Promise<Credentials | undefined> {
    const result = await (await this.state()).read(name);
    return result.kind === 'ok' && result.record.provider === this.name ? result.record.credentials : undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.serial.idle();
  }

  /** Loads the kernel fence of `runAs` once per run (again after a failure); without `runAs` there is none to load. */
  private fence(): Promise<void> {
    const { runAs } = this.opts;
    if (runAs === undefined) return Promise.resolve();
    this.fenced ??= loadFence(this.name, this.opts.egress, runAs).then(
      () => this.log.info('egress fence loaded', { table: fenceTable(this.name, runAs.uid), uid: runAs.uid }),
      (err: unknown) => {
        this.fenced = undefined;
        throw err;
      },
    );
    return this.fenced;
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

  /** Running only when the recorded pid is alive and carries our markers (not a recycled pid). */
  private async observe(store: StateStore, record: InstanceRecord): Promise<Instance> {
    // A process that does not listen yet may still fail to start.
    if (this.starting.has(record.name)) return this.toInstance(record, 'Pending');
    return this.toInstance(record, (await this.alive(record, store)) ? 'Running' : 'Terminated');
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
      ...(record.tlsPort !== undefined && { tlsPort: record.tlsPort }),
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
 *   logger });
 */
export function createProcessBackend(opts: ProcessBackendOptions): RelayBackend {
  return new ProcessBackend(opts);
}
