/** The Compute API as this provider uses it: the SDK loaded on first use, one child span per call, parsed answers. */
import { SpanKind, SpanStatusCode, trace, type Attributes } from '@opentelemetry/api';
import type { protos } from '@google-cloud/compute';
import { z } from 'zod';
import { ComputeCallError, decodeFailure, type OperationFailure } from './errors.js';
import type { GcpOptions } from './options.js';
import { gceInstanceSchema, lastSegment, type GceInstance } from './resources.js';

/** Looked up per call, so a tracer provider installed later (telemetry setup, tests) is followed. */
const tracer = () => trace.getTracer('egress/gcp');

/** An operation, normalised: `zone` is a zone name, times are epoch ms. */
export interface GceOperation {
  name: string;
  zone: string;
  status: string;
  type: string;
  /** The name of the instance it acts on. */
  target: string;
  insertedAt: number;
  requestId?: string | undefined;
  failure?: OperationFailure | undefined;
}

const operationSchema = z.object({
  name: z.string(),
  zone: z.string().nullish(),
  status: z.string().nullish(),
  operationType: z.string().nullish(),
  targetLink: z.string().nullish(),
  insertTime: z.string().nullish(),
  clientOperationId: z.string().nullish(),
  httpErrorStatusCode: z.number().nullish(),
  error: z
    .object({
      errors: z
        .array(z.object({ code: z.string().nullish(), location: z.string().nullish(), message: z.string().nullish() }))
        .nullish(),
    })
    .nullish(),
});
const zoneSchema = z.object({ name: z.string(), status: z.string().nullish() });
const guestAttributesSchema = z.object({ variableValue: z.string().nullish() });

function toOperation(raw: unknown): GceOperation {
  const op = operationSchema.parse(raw);
  const errors = (op.error?.errors ?? []).map((e) => ({
    code: e.code ?? '',
    location: e.location || undefined,
    message: e.message ?? '',
  }));
  return {
    name: op.name,
    zone: lastSegment(op.zone),
    status: op.status ?? '',
    type: op.operationType ?? '',
    target: lastSegment(op.targetLink),
    insertedAt: Date.parse(op.insertTime ?? '') || 0,
    requestId: op.clientOperationId || undefined,
    failure: errors.length > 0 ? { errors, httpErrorStatusCode: op.httpErrorStatusCode ?? undefined } : undefined,
  };
}

/** The Compute calls the provider makes. Every method throws `ComputeCallError` on failure. */
export interface ComputeApi {
  readonly project: string;
  insertInstance(
    zone: string,
    resource: protos.google.cloud.compute.v1.IInstance,
    requestId: string,
  ): Promise<GceOperation>;
  getInstance(zone: string, name: string): Promise<GceInstance>;
  deleteInstance(zone: string, name: string): Promise<GceOperation>;
  /**
   * Every zone's instances matching `filter` (empty: all), and the zones that could not be read.
   * Sent with `returnPartialSuccess`, so an unreachable zone is reported, not the whole list failed.
   */
  listInstances(filter: string): Promise<{ instances: GceInstance[]; unreachable: string[] }>;
  waitOperation(zone: string, name: string, timeoutMs: number): Promise<GceOperation>;
  getOperation(zone: string, name: string): Promise<GceOperation>;
  deleteOperation(zone: string, name: string): Promise<void>;
  /** Every scope's operations matching `filter`. */
  listOperations(filter: string): Promise<{ operations: GceOperation[]; unreachable: string[] }>;
  /** The value of one guest attribute (`namespace/key`); NotFound while the guest has not set it. */
  getGuestAttribute(zone: string, name: string, key: string): Promise<string>;
  getZone(zone: string): Promise<{ name: string; status: string }>;
  getMachineType(zone: string, name: string): Promise<void>;
  /** Resolves `projects/P/global/images/family/F` or `projects/P/global/images/NAME`. */
  getImage(image: { project: string; family?: string; name?: string }): Promise<void>;
}

/**
 * Runs one Compute call in its own client span, within `deadlineMs`: in REST mode gax ignores a
 * call's `timeout`, so the deadline is kept here (and the HTTP transport aborts the request at the
 * call timeout). Credentials and request bodies never become attributes.
 */
async function tracedCall<T>(
  method: string,
  attributes: Attributes,
  deadlineMs: number,
  fn: () => Promise<T>,
): Promise<T> {
  return tracer().startActiveSpan(
    `compute.${method}`,
    { kind: SpanKind.CLIENT, attributes: { 'rpc.system': 'google_api', 'rpc.method': method, ...attributes } },
    async (span) => {
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<never>((_, reject) => {
        timer = setTimeout(
          () =>
            reject(new ComputeCallError(method, { reasons: [], message: 'the call timed out', network: 'timeout' })),
          deadlineMs,
        );
      });
      try {
        return await Promise.race([fn(), deadline]);
      } catch (err) {
        const failure = decodeFailure(err);
        if (failure.status !== undefined) span.setAttribute('http.response.status_code', failure.status);
        if (failure.reasons.length > 0) span.setAttribute('gcp.error.reasons', failure.reasons.join(','));
        span.setStatus({
          code: SpanStatusCode.ERROR,
          message: `${failure.status ?? failure.network ?? 'error'} ${failure.reasons.join(',')}`.trim(),
        });
        throw new ComputeCallError(method, failure);
      } finally {
        clearTimeout(timer);
        span.end();
      }
    },
  );
}

/**
 * Loads the SDK (on first use: functions that never touch gcp never pay for it) and builds this
 * provider's own clients, with its own credentials: ADC, the key file, or none over plain http.
 *
 * @throws whatever loading the credentials throws (the caller maps it to a RetryableError)
 */
export async function loadComputeApi(options: GcpOptions): Promise<ComputeApi> {
  const sdk = await import('@google-cloud/compute');
  const base: ClientOptions = {
    projectId: options.project,
    fallback: true,
    protocol: options.protocol,
    ...(options.apiEndpoint ? { apiEndpoint: options.apiEndpoint } : {}),
    ...(options.port ? { port: options.port } : {}),
  };
  const transporterOptions = { timeout: options.callTimeoutSeconds * 1000 };
  if (options.protocol === 'http') {
    const passThrough: unknown = new (await import('google-auth-library')).PassThroughClient({ transporterOptions });
    if (!isSdkAuthClient(passThrough))
      throw new Error('google-auth-library PassThroughClient cannot authorise requests');
    base.authClient = passThrough;
  } else {
    base.scopes = ['https://www.googleapis.com/auth/cloud-platform'];
    base.clientOptions = { transporterOptions };
    if (options.keyFile) base.keyFilename = options.keyFile;
  }
  const instances = new sdk.InstancesClient(base);
  // One credential (and token cache) for all of this provider's clients.
  const shared: ClientOptions = { ...base, auth: instances.auth };
  const clients = {
    instances,
    zoneOperations: new sdk.ZoneOperationsClient(shared),
    globalOperations: new sdk.GlobalOperationsClient(shared),
    zones: new sdk.ZonesClient(shared),
    machineTypes: new sdk.MachineTypesClient(shared),
    images: new sdk.ImagesClient(shared),
  };
  // Awaited here so a credentials failure is an error we handle: each SDK method otherwise starts
  // initialize() itself and lets its rejection go unhandled, which ends the process.
  await Promise.all(Object.values(clients).map((c) => c.initialize()));
  return createSdkApi(options.project, clients, options.callTimeoutSeconds * 1000);
}

type Sdk = typeof import('@google-cloud/compute');
type ClientOptions = NonNullable<ConstructorParameters<Sdk['InstancesClient']>[0]>;
type SdkAuthClient = NonNullable<ClientOptions['authClient']>;

/**
 * gax 5.0.8 pins google-auth-library 10.5.0 and this project uses 10.9.1, so the same class comes
 * from two copies that TypeScript tells apart. gax only calls `getRequestHeaders` and `fetch` on
 * it (REST mode), which is what this checks.
 */
function isSdkAuthClient(value: unknown): value is SdkAuthClient {
  return (
    typeof value === 'object' &&
    value !== null &&
    'getRequestHeaders' in value &&
    typeof value.getRequestHeaders === 'function' &&
    'fetch' in value &&
    typeof value.fetch === 'function'
  );
}

type Clients = {
  instances: InstanceType<Sdk['InstancesClient']>;
  zoneOperations: InstanceType<Sdk['ZoneOperationsClient']>;
  globalOperations: InstanceType<Sdk['GlobalOperationsClient']>;
  zones: InstanceType<Sdk['ZonesClient']>;
  machineTypes: InstanceType<Sdk['MachineTypesClient']>;
  images: InstanceType<Sdk['ImagesClient']>;
};

/**
 * The port over the SDK's clients: one short entry per Compute call, each traced with its
 * deadline, in one table to read against `ComputeApi`.
 */
function createSdkApi(project: string, c: Clients, timeout: number): ComputeApi {
  const opts = { timeout };
  // The async iterator pages on demand anyway; saying so keeps gax from warning on every list.
  const pages = { ...opts, autoPaginate: false };
  const traced = <T>(method: string, attributes: Attributes, fn: () => Promise<T>, deadlineMs = timeout) =>
    tracedCall(method, attributes, deadlineMs, fn);
  const at = (zone: string, name?: string): Attributes => ({
    'gcp.project': project,
    'gcp.zone': zone,
    ...(name ? { 'gcp.resource': name } : {}),
  });
  return {
    project,
    insertInstance: (zone, instanceResource, requestId) =>
      traced('instances.insert', at(zone, instanceResource.name ?? undefined), async () => {
        const [lro] = await c.instances.insert({ project, zone, instanceResource, requestId }, opts);
        return toOperation(lro.latestResponse);
      }),
    getInstance: (zone, instance) =>
      traced('instances.get', at(zone, instance), async () =>
        gceInstanceSchema.parse((await c.instances.get({ project, zone, instance }, opts))[0]),
      ),
    deleteInstance: (zone, instance) =>
      traced('instances.delete', at(zone, instance), async () => {
        const [lro] = await c.instances.delete({ project, zone, instance }, opts);
        return toOperation(lro.latestResponse);
      }),
    listInstances: (filter) =>
      traced('instances.aggregatedList', { 'gcp.project': project }, async () => {
        const instances: GceInstance[] = [];
        const unreachable: string[] = [];
        for await (const [scope, list] of c.instances.aggregatedListAsync(
          { project, returnPartialSuccess: true, ...(filter ? { filter } : {}) },
          pages,
        )) {
          if (list.warning?.code === 'UNREACHABLE') unreachable.push(scope);
          for (const i of list.instances ?? []) instances.push(gceInstanceSchema.parse(i));
        }
        return { instances, unreachable };
      }),
    waitOperation: (zone, operation, ms) =>
      traced(
        'zoneOperations.wait',
        at(zone, operation),
        async () => toOperation((await c.zoneOperations.wait({ project, zone, operation }, opts))[0]),
        Math.min(ms, timeout),
      ),
    getOperation: (zone, operation) =>
      traced('zoneOperations.get', at(zone, operation), async () =>
        toOperation((await c.zoneOperations.get({ project, zone, operation }, opts))[0]),
      ),
    deleteOperation: (zone, operation) =>
      traced('zoneOperations.delete', at(zone, operation), async () => {
        await c.zoneOperations.delete({ project, zone, operation }, opts);
      }),
    listOperations: (filter) =>
      traced('globalOperations.aggregatedList', { 'gcp.project': project }, async () => {
        const operations: GceOperation[] = [];
        const unreachable: string[] = [];
        for await (const [scope, list] of c.globalOperations.aggregatedListAsync(
          { project, returnPartialSuccess: true, filter },
          pages,
        )) {
          if (list.warning?.code === 'UNREACHABLE') unreachable.push(scope);
          for (const o of list.operations ?? []) operations.push(toOperation(o));
        }
        return { operations, unreachable };
      }),
    getGuestAttribute: (zone, instance, variableKey) =>
      traced('instances.getGuestAttributes', at(zone, instance), async () => {
        const [attrs] = await c.instances.getGuestAttributes({ project, zone, instance, variableKey }, opts);
        return guestAttributesSchema.parse(attrs).variableValue ?? '';
      }),
    getZone: (zone) =>
      traced('zones.get', at(zone), async () => {
        const z = zoneSchema.parse((await c.zones.get({ project, zone }, opts))[0]);
        return { name: z.name, status: z.status ?? '' };
      }),
    getMachineType: (zone, machineType) =>
      traced('machineTypes.get', at(zone, machineType), async () => {
        await c.machineTypes.get({ project, zone, machineType }, opts);
      }),
    getImage: (image) =>
      traced(image.family ? 'images.getFromFamily' : 'images.get', { 'gcp.project': image.project }, async () => {
        if (image.family) await c.images.getFromFamily({ project: image.project, family: image.family }, opts);
        else await c.images.get({ project: image.project, image: image.name ?? '' }, opts);
      }),
  };
}
