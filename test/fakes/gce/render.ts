/** The fake's resources in Compute's JSON shapes (Instance, Operation, Zone, MachineType, Image). */
import { MACHINE_TYPES, regionOfZone } from './catalog.js';
import { notFound, OPERATION_ERRORS } from './errors.js';
import type { InsertBody } from './insert-body.js';
import { accessConfigsOf } from './insert-rules.js';
import { BASE, timestamp, type Op, type Vm } from './resources.js';

const zoneUrl = (project: string, zone: string) => `${BASE}/projects/${project}/zones/${zone}`;
const absolute = (project: string, path: string) =>
  path.startsWith('https://')
    ? path
    : path.startsWith('projects/')
      ? `${BASE}/${path}`
      : `${BASE}/projects/${project}/${path}`;
const fingerprint = (vm: Vm, what: string) => Buffer.from(`${vm.id}/${what}`).toString('base64').slice(0, 12);

/** An Instance resource. The external address exists from STAGING until the VM stops. */
export function instanceJson(vm: Vm, body: InsertBody): Record<string, unknown> {
  const zone = zoneUrl(vm.project, vm.zone);
  return {
    kind: 'compute#instance',
    id: vm.id,
    creationTimestamp: timestamp(vm.createdAt),
    name: vm.name,
    description: body['description'] ?? '',
    tags: { items: body.tags?.items ?? [], fingerprint: fingerprint(vm, 'tags') },
    machineType: absolute(vm.project, body.machineType ?? ''),
    status: vm.status,
    zone,
    canIpForward: false,
    networkInterfaces: [
      {
        kind: 'compute#networkInterface',
        network: absolute(vm.project, vm.nic.network),
        subnetwork: absolute(vm.project, vm.nic.subnetwork),
        networkIP: vm.networkIP,
        name: 'nic0',
        // An external address only for an interface that asked for one (no access config: no
        // external internet access, as the instances reference says).
        accessConfigs: accessConfigsOf(body).map((c) => ({
          kind: 'compute#accessConfig',
          type: 'ONE_TO_ONE_NAT',
          name: typeof c.name === 'string' ? c.name : 'External NAT',
          ...(vm.natIP ? { natIP: vm.natIP } : {}),
          networkTier: 'PREMIUM',
        })),
        fingerprint: fingerprint(vm, 'nic0'),
        stackType: 'IPV4_ONLY',
      },
    ],
    disks: [
      {
        kind: 'compute#attachedDisk',
        type: 'PERSISTENT',
        mode: 'READ_WRITE',
        source: `${zone}/disks/${vm.name}`,
        deviceName: 'persistent-disk-0',
        index: 0,
        boot: true,
        autoDelete: true,
        interface: 'SCSI',
        diskSizeGb: '10',
      },
    ],
    metadata: { kind: 'compute#metadata', fingerprint: fingerprint(vm, 'metadata'), items: body.metadata?.items ?? [] },
    serviceAccounts: Array.isArray(body['serviceAccounts']) ? body['serviceAccounts'] : [],
    selfLink: `${zone}/instances/${vm.name}`,
    scheduling: body.scheduling ?? {},
    cpuPlatform: vm.status === 'RUNNING' ? 'Intel Broadwell' : 'Unknown CPU Platform',
    labels: body.labels ?? {},
    labelFingerprint: fingerprint(vm, 'labels'),
    startRestricted: false,
    deletionProtection: false,
    fingerprint: fingerprint(vm, 'instance'),
    ...(vm.startedAt ? { lastStartTimestamp: timestamp(vm.startedAt) } : {}),
  };
}

/** An Operation resource (zonal). */
export function operationJson(op: Op): Record<string, unknown> {
  const zone = zoneUrl(op.project, op.zone);
  return {
    kind: 'compute#operation',
    id: op.id,
    name: op.name,
    zone,
    operationType: op.type,
    targetLink: `${zone}/instances/${op.target}`,
    targetId: op.targetId,
    status: op.status,
    user: `fake-sa@${op.project}.iam.gserviceaccount.com`,
    progress: op.status === 'DONE' ? 100 : 0,
    insertTime: timestamp(op.insertTime),
    startTime: timestamp(op.insertTime),
    ...(op.endTime ? { endTime: timestamp(op.endTime) } : {}),
    selfLink: `${zone}/operations/${op.name}`,
    ...(op.requestId ? { clientOperationId: op.requestId } : {}),
    ...(op.error
      ? {
          error: {
            errors: [
              {
                code: op.error.code,
                message: op.error.message,
                ...(op.error.location ? { location: op.error.location } : {}),
              },
            ],
          },
          httpErrorStatusCode: httpStatusOf(op.error.code),
          httpErrorMessage: REASON_PHRASES[httpStatusOf(op.error.code)] ?? 'BAD REQUEST',
        }
      : {}),
  };
}

/** The operation's HTTP status: the one `OPERATION_ERRORS` gives its code, else 400. */
function httpStatusOf(code: string): number {
  return OPERATION_ERRORS[code]?.status ?? (code.endsWith('EXHAUSTED') ? 503 : 400);
}

/** `httpErrorMessage` is the status's reason phrase in capitals, as Compute writes it ("BAD REQUEST"). */
const REASON_PHRASES: Record<number, string> = {
  400: 'BAD REQUEST',
  403: 'FORBIDDEN',
  404: 'NOT FOUND',
  409: 'CONFLICT',
  500: 'INTERNAL SERVER ERROR',
  503: 'SERVICE UNAVAILABLE',
};

/** A Zone resource. */
export function zoneJson(project: string, zone: string, status = 'UP'): Record<string, unknown> {
  return {
    kind: 'compute#zone',
    id: String(2000 + zone.length),
    creationTimestamp: '1969-12-31T16:00:00.000-08:00',
    name: zone,
    description: zone,
    status,
    region: `${BASE}/projects/${project}/regions/${regionOfZone(zone) ?? ''}`,
    selfLink: zoneUrl(project, zone),
    availableCpuPlatforms: ['Intel Broadwell', 'AMD Milan'],
    supportsPzs: false,
  };
}

/** A MachineType resource. */
export function machineTypeJson(project: string, zone: string, name: string): Record<string, unknown> {
  const spec = MACHINE_TYPES[name];
  return {
    kind: 'compute#machineType',
    id: String(1000 + name.length),
    name,
    description: `${spec?.guestCpus ?? 0} vCPU, ${spec?.memoryMb ?? 0} MB RAM`,
    guestCpus: spec?.guestCpus ?? 0,
    memoryMb: spec?.memoryMb ?? 0,
    zone,
    selfLink: `${zoneUrl(project, zone)}/machineTypes/${name}`,
  };
}

/** An Image resource. */
export function imageJson(image: { project: string; name: string; family: string }): Record<string, unknown> {
  return {
    kind: 'compute#image',
    id: String(3000 + image.name.length),
    name: image.name,
    family: image.family,
    status: 'READY',
    diskSizeGb: '10',
    architecture: 'X86_64',
    selfLink: `${BASE}/projects/${image.project}/global/images/${image.name}`,
  };
}

/** The `warning` of a scope with nothing to list, or one that could not be read. */
export function scopeWarning(scope: string, code: 'NO_RESULTS_ON_PAGE' | 'UNREACHABLE'): Record<string, unknown> {
  const message =
    code === 'UNREACHABLE'
      ? `Scope '${scope}' is unreachable.`
      : `There are no results for scope '${scope}' on this page.`;
  return { warning: { code, message, data: [{ key: 'scope', value: scope }] } };
}

/**
 * instances.getGuestAttributes: one key (`variableKey`) or every key under a path (`queryPath`).
 *
 * @throws ComputeError 404 for a key the guest has not set
 */
export function guestAttributes(vm: Vm, query: URLSearchParams, path: string): Record<string, unknown> {
  const key = query.get('variableKey');
  const selfLink = `${BASE}/${path}/guestAttributes`;
  if (key) {
    const value = vm.attributes.get(key);
    if (value === undefined) throw notFound(`${path}/guestAttributes/${key}`);
    return { kind: 'compute#guestAttributes', variableKey: key, variableValue: value, selfLink };
  }
  const prefix = query.get('queryPath') ?? '';
  const items = [...vm.attributes]
    .filter(([k]) => k.startsWith(prefix))
    .map(([k, value]) => ({ namespace: k.split('/')[0], key: k.split('/').slice(1).join('/'), value }));
  return { kind: 'compute#guestAttributes', queryPath: prefix, queryValue: { items }, selfLink };
}
