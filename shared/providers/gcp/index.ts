/**
 * The `gcp` provider: each proxy is a Compute Engine VM with an external IP, tinyproxy installed by
 * cloud-init user-data, and ownership labels. `create` and `delete` wait (bounded) on their zone
 * operation; an insert that fails after `create` returned is reported by `get` as a `Failed` instance.
 */
import { DEFAULT_EGRESS_POLICY, type EgressPolicy } from '../../config/egress-policy.js';
import type { Config } from '../../config/schema.js';
import {
  EgressError,
  NotFoundError,
  PermanentError,
  RetryableError,
  ValidationError,
  asEgressError,
} from '../../errors.js';
import type { Logger } from '../../logger.js';
import type { Instance, InstanceSpec, Provider, ProviderHealth } from '../contract.js';
import type { ProviderFactoryDeps } from '../factory.js';
import { loadComputeApi, type ComputeApi, type GceOperation } from './compute.js';
import {
  decodeFailure,
  isAlreadyExists,
  isInvalid,
  isNotFound,
  isNotReady,
  operationError,
  typedError,
  hide,
} from './errors.js';
import { listFiltered } from './listing.js';
import { READY_ATTRIBUTE } from './cloud-init.js';
import { InsertBook, settle, withField } from './operations.js';
import { notReady } from './readiness.js';
import { parseGcpOptions, regionOf, resolveGcpPlacement, type GcpOptions, type GcpPlacement } from './options.js';
import { GCE_REGION_COUNTRIES } from './regions.js';
import {
  LABELS,
  instanceResource,
  lastSegment,
  ownedBy,
  requestIdFor,
  specHashOfRequestId,
  toInstance,
  type GceInstance,
} from './resources.js';

/** What the factory takes from the registry's {@link ProviderFactoryDeps}, and its test seams. */
export type GcpProviderDeps = Pick<ProviderFactoryDeps, 'provider' | 'path' | 'logger' | 'now'> & {
  /** This installation's id: instances are labelled with it, and `list` and `delete` keep to it. */
  config: Pick<Config, 'installationId'>;
  /** Builds the Compute API; the SDK-backed one (loaded on first use) by default. */
  loadApi?: (options: GcpOptions) => Promise<ComputeApi>;
};

class GcpProvider implements Provider {
  readonly name: string;
  readonly type = 'gcp';
  /** The check function probes `ip:port` through the proxy with `credentials/{name}`. */
  readonly probesRemotely = false;
  private readonly options: GcpOptions;
  /** Where the VMs' proxies may connect: enforced in each VM by its user-data. */
  private readonly egress: EgressPolicy;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly waitMs: number;
  private api: Promise<ComputeApi> | undefined;
  /** Zone of each instance seen, so `get` is one `instances.get` instead of an aggregated search. */
  private readonly zones = new Map<string, string>();
  private readonly inserts = new InsertBook();
  /** Instances (name#id) whose guest reported ready: asked once per instance and process. */
  private readonly ready = new Set<string>();

  private readonly installationId: string;

  constructor(private readonly deps: GcpProviderDeps) {
    this.name = deps.provider.name;
    this.installationId = deps.config.installationId;
    this.options = parseGcpOptions(deps.provider.options, deps.path);
    this.egress = deps.provider.egress ?? DEFAULT_EGRESS_POLICY;
    this.log = deps.logger.child({ provider: this.name });
    this.now = deps.now ?? Date.now;
    this.waitMs = this.options.operationWaitSeconds * 1000;
  }

  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    return { ...resolveGcpPlacement(placement, this.options) };
  }

  /** The country of the placement's region (regions.ts). */
  expectedCountry(placement: Record<string, unknown>): string | undefined {
    const zone = placement['zone'];
    return typeof zone === 'string' ? GCE_REGION_COUNTRIES[regionOf(zone)] : undefined;
  }

  async create(spec: InstanceSpec): Promise<Instance> {
    const placement = this.placementOf(spec);
    const port = spec.port || this.options.proxyPort;
    const resource = instanceResource(spec, placement, this.name, port, this.egress);
    const api = await this.compute();
    const what = `insert of instance ${spec.name} in zone ${placement.zone}`;
    let op: GceOperation;
    try {
      op = await api.insertInstance(placement.zone, resource, requestIdFor(spec.specHash));
    } catch (err) {
      const failure = decodeFailure(err);
      if (isAlreadyExists(failure)) return this.adopt(spec, placement.zone);
      failure.message = hide(failure.message, spec.credentials.password);
      let error = typedError(failure, what, 'compute.instances.create');
      if (isInvalid(failure)) error = await withField(api, error, placement);
      throw error;
    }
    this.zones.set(spec.name, placement.zone);
    this.inserts.record(spec.name, {
      zone: placement.zone,
      operation: op.name,
      proxy: spec.proxy,
      installationId: spec.installationId,
      specHash: spec.specHash,
      placement,
    });
    this.log.info('gce insert started', { instance: spec.name, zone: placement.zone, operation: op.name });
    const done = await settle(api, placement.zone, op, this.waitMs, this.now);
    if (done.failure) {
      // Reported through create's error: forget the operation, or `get` would report it again.
      await this.inserts.forget(api, done);
      const errors = done.failure.errors.map((e) => ({ ...e, message: hide(e.message, spec.credentials.password) }));
      const error = await withField(api, operationError({ ...done.failure, errors }, what), placement);
      this.log.warn('gce insert failed', { instance: spec.name, code: error.code, error: error.message });
      throw error;
    }
    return this.get(spec.name);
  }

  async get(name: string): Promise<Instance> {
    const api = await this.compute();
    const found = await this.locate(api, name);
    if (found) return this.withReadiness(api, found);
    const op = await this.inserts.latest(api, name);
    if (!op || (op.status === 'DONE' && !op.failure))
      throw new NotFoundError(`instance ${name} does not exist in project ${api.project}`);
    const record = this.inserts.get(name);
    const pending: Instance = {
      name,
      proxy: record?.proxy ?? '',
      installationId: record?.installationId ?? this.installationId,
      specHash: record?.specHash ?? specHashOfRequestId(op.requestId) ?? '',
      state: 'Pending',
      ip: '',
      port: 0,
      createdAt: op.insertedAt || this.now(),
    };
    if (!op.failure) return pending;
    let error = operationError(op.failure, `insert of instance ${name} in zone ${op.zone}`);
    if (record) error = await withField(api, error, record.placement);
    return { ...pending, state: 'Failed', error: error.toInfo() };
  }

  async delete(name: string): Promise<void> {
    const api = await this.compute();
    const found = await this.locate(api, name);
    if (!found) return this.inserts.forgetFailed(api, name);
    if (!ownedBy(found, this.installationId))
      throw new PermanentError(
        `instance ${name} is not labelled as installation "${this.installationId}"'s; not deleting it`,
      );
    const zone = lastSegment(found.zone);
    let op: GceOperation;
    try {
      op = await api.deleteInstance(zone, name);
    } catch (err) {
      const failure = decodeFailure(err);
      if (isNotFound(failure)) return void this.zones.delete(name);
      // Another operation holds the instance (an earlier delete, or its insert): the next poll looks again.
      if (isNotReady(failure)) return;
      throw typedError(failure, `delete of instance ${name}`, 'compute.instances.delete');
    }
    this.log.info('gce delete started', { instance: name, zone, operation: op.name });
    const done = await settle(api, zone, op, this.waitMs, this.now);
    if (done.failure && !done.failure.errors.some((e) => e.code === 'RESOURCE_NOT_FOUND'))
      throw operationError(done.failure, `delete of instance ${name}`);
    if (done.status === 'DONE') {
      this.zones.delete(name);
      this.inserts.drop(name);
      for (const key of this.ready) if (key.startsWith(`${name}#`)) this.ready.delete(key);
    }
  }

  async list(): Promise<Instance[]> {
    const api = await this.compute();
    const filter = [
      `(labels.${LABELS.managed} = "true")`,
      `(labels.${LABELS.installation} = "${this.installationId}")`,
      `(labels.${LABELS.provider} = "${this.name}")`,
    ].join(' ');
    const result = await listFiltered(api, filter, 'listing instances');
    if (result.unreachable.length > 0)
      throw new RetryableError(`listing is incomplete: ${result.unreachable.join(', ')} could not be read`, 10_000);
    // The filter is the API's; ownership is checked here again before anything is reported as ours.
    const ours = result.instances.filter(
      (i) => ownedBy(i, this.installationId) && i.labels?.[LABELS.provider] === this.name,
    );
    for (const i of ours) this.zones.set(i.name, lastSegment(i.zone));
    return ours.map((i) => toInstance(i, this.options.probeVia));
  }

  async check(): Promise<ProviderHealth> {
    const started = this.now();
    const zone = this.options.zone;
    try {
      const api = await this.compute();
      const z = await api.getZone(zone);
      const latencyMs = this.now() - started;
      if (z.status !== 'UP') return { ok: false, message: `zone ${zone} is ${z.status || 'not UP'}`, latencyMs };
      return { ok: true, message: `Compute API answers; zone ${zone} of project ${api.project} is UP`, latencyMs };
    } catch (err) {
      const error =
        err instanceof EgressError ? err : typedError(decodeFailure(err), `zones.get of ${zone}`, 'compute.zones.get');
      return { ok: false, message: error.message, latencyMs: this.now() - started };
    }
  }

  /**
   * A RUNNING VM is Running only once its guest reported the proxy ready (READY_ATTRIBUTE) since it
   * last started; a VM that has not within `readySeconds` of that start is Failed (cloud-init did
   * not bring the proxy up: a lost PUT the guest gave up retrying, an image without cloud-init).
   */
  private async withReadiness(api: ComputeApi, gce: GceInstance): Promise<Instance> {
    const instance = toInstance(gce, this.options.probeVia);
    const key = `${gce.name}#${gce.id ?? gce.creationTimestamp ?? ''}#${gce.lastStartTimestamp ?? ''}`;
    if (instance.state !== 'Running' || this.ready.has(key)) return instance;
    try {
      await api.getGuestAttribute(lastSegment(gce.zone), gce.name, READY_ATTRIBUTE);
      for (const k of this.ready) if (k.startsWith(`${gce.name}#`)) this.ready.delete(k);
      this.ready.add(key);
      return instance;
    } catch (err) {
      const failure = decodeFailure(err);
      if (!isNotFound(failure))
        throw typedError(failure, `readiness of instance ${gce.name}`, 'compute.instances.getGuestAttributes');
      const unreachable = { ip: '', ...(instance.probeIp !== undefined && { probeIp: '' }) };
      return {
        ...instance,
        ...notReady(gce, instance.createdAt, this.now(), this.options.readySeconds),
        ...unreachable,
      };
    }
  }

  private placementOf(spec: InstanceSpec): GcpPlacement {
    try {
      return resolveGcpPlacement(spec.placement, this.options);
    } catch (err) {
      if (err instanceof ValidationError) throw new PermanentError(err.reason, err.field);
      throw err;
    }
  }

  private compute(): Promise<ComputeApi> {
    this.api ??= (this.deps.loadApi ?? loadComputeApi)(this.options).catch((err: unknown) => {
      this.api = undefined;
      throw new RetryableError(`cannot set up the Compute API client: ${asEgressError(err).message}`, 10_000, {
        cause: err,
      });
    });
    return this.api;
  }

  /** AlreadyExists: the instance of this name is adopted, if it is this installation's. */
  private async adopt(spec: InstanceSpec, zone: string): Promise<Instance> {
    this.zones.set(spec.name, zone);
    const existing = await this.get(spec.name);
    if (existing.installationId !== spec.installationId)
      throw new PermanentError(`instance name ${spec.name} is taken by installation "${existing.installationId}"`);
    return existing;
  }

  /** Finds an instance by name: in its known zone, or by an aggregated search. */
  private async locate(api: ComputeApi, name: string): Promise<GceInstance | undefined> {
    const zone = this.zones.get(name);
    if (zone) {
      try {
        return await api.getInstance(zone, name);
      } catch (err) {
        const failure = decodeFailure(err);
        if (!isNotFound(failure)) throw typedError(failure, `get of instance ${name}`, 'compute.instances.get');
        this.zones.delete(name);
      }
    }
    const result = await listFiltered(api, `name = "${name}"`, `search for instance ${name}`);
    const hit = result.instances.find((i) => i.name === name);
    if (hit) {
      this.zones.set(name, lastSegment(hit.zone));
      return hit;
    }
    // Rule not-found-certain: NotFound only when certain.
    if (result.unreachable.length > 0)
      throw new RetryableError(`instance ${name} not seen, but ${result.unreachable.join(', ')} could not be read`);
    return undefined;
  }
}

/**
 * Builds a `gcp` provider with its own Compute clients and credentials.
 *
 * @throws ValidationError naming `config.providers.N.options.<key>` for invalid options
 */
export function createGcpProvider(deps: GcpProviderDeps): Provider {
  return new GcpProvider(deps);
}
