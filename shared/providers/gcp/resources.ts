/** Compute resources as this provider writes and reads them: the instance body, ownership labels, state mapping. */
import { randomBytes } from 'node:crypto';
import type { protos } from '@google-cloud/compute';
import { z } from 'zod';
import { PermanentError, RetryableError } from '../../errors.js';
import type { Instance, InstanceSpec, InstanceState } from '../contract.js';
import type { EgressPolicy } from '../../config/egress-policy.js';
import { guestTlsPort } from '../stunnel.js';
import { buildUserData } from './cloud-init.js';
import type { GcpOptions, GcpPlacement } from './options.js';

/** Ownership labels: GC and `list` only ever see instances carrying this installation's. */
export const LABELS = {
  managed: 'egress-managed',
  installation: 'egress-installation',
  provider: 'egress-provider',
  proxy: 'egress-proxy',
  specHash: 'egress-spec',
  port: 'egress-port',
} as const;

/** GCE label values: at most 63 of lowercase letters, digits, `_` and `-` (empty allowed). */
const LABEL_VALUE = /^[a-z0-9_-]{0,63}$/;

/** An instance as the Compute API returns it (only the fields this provider reads). */
export const gceInstanceSchema = z.object({
  name: z.string(),
  id: z.string().nullish(),
  zone: z.string().nullish(),
  status: z.string().nullish(),
  creationTimestamp: z.string().nullish(),
  /** When the VM last started (each boot, reboots included). */
  lastStartTimestamp: z.string().nullish(),
  labels: z.record(z.string(), z.string()).nullish(),
  /** `networkIP`: the interface's internal address; `accessConfigs[].natIP`: its external one (https://cloud.google.com/compute/docs/reference/rest/v1/instances). */
  networkInterfaces: z
    .array(
      z.object({
        networkIP: z.string().nullish(),
        accessConfigs: z.array(z.object({ natIP: z.string().nullish() })).nullish(),
      }),
    )
    .nullish(),
});
export type GceInstance = z.infer<typeof gceInstanceSchema>;

/**
 * Compute instance status → contract state. PROVISIONING/STAGING (and PENDING, REPAIRING, which
 * come back to RUNNING) are Pending; anything stopping, stopped or suspended is Stopped;
 * TERMINATED (a stopped or preempted VM) and DEPROVISIONING are Terminated.
 */
export function stateOf(status: string | null | undefined): InstanceState {
  switch (status) {
    case 'RUNNING':
      return 'Running';
    case 'STOPPING':
    case 'PENDING_STOP':
    case 'STOPPED':
    case 'SUSPENDING':
    case 'SUSPENDED':
      return 'Stopped';
    case 'TERMINATED':
    case 'DEPROVISIONING':
      return 'Terminated';
    default:
      return 'Pending';
  }
}

/** The zone name from a zone URL (`…/zones/us-central1-a` → `us-central1-a`). */
export const lastSegment = (url: string | null | undefined) => (url ?? '').split('/').pop() ?? '';

/**
 * The contract's view of a Compute instance: clients get the external address (`ip`); with
 * `probeVia: internal` the prober gets the internal one (`probeIp`), reached over the VPC.
 *
 * @param probeVia - the provider's `probeVia` option
 * @throws RetryableError when the API returned no usable `creationTimestamp` (rule created-at-nonzero forbids a zero)
 */
export function toInstance(gce: GceInstance, probeVia: GcpOptions['probeVia']): Instance {
  const labels = gce.labels ?? {};
  const createdAt = Date.parse(gce.creationTimestamp ?? '');
  if (!(createdAt > 0)) throw new RetryableError(`instance ${gce.name} has no creationTimestamp yet`, 2000);
  const nic = gce.networkInterfaces?.[0];
  const natIP = nic?.accessConfigs?.[0]?.natIP ?? '';
  const probeIp = probeVia === 'internal' ? (nic?.networkIP ?? '') : undefined;
  let state = stateOf(gce.status);
  // RUNNING without the addresses clients and the prober use is not reachable: keep it Pending
  // (rule reachable-with-credentials).
  if (state === 'Running' && (!natIP || probeIp === '')) state = 'Pending';
  const running = state === 'Running';
  // Compute knows no ports: the proxy's is the instance's own `egress-port` label (Instance.labels,
  // https://cloud.google.com/compute/docs/reference/rest/v1/instances), and its user-data puts
  // the TLS listener on the next one (guestTlsPort, the kvm guests' convention too).
  const port = Number(labels[LABELS.port] ?? 0) || 0;
  return {
    name: gce.name,
    proxy: labels[LABELS.proxy] ?? '',
    installationId: labels[LABELS.installation] ?? '',
    specHash: labels[LABELS.specHash] ?? '',
    state,
    ip: running ? natIP : '',
    ...(probeIp !== undefined && { probeIp: running ? probeIp : '' }),
    port,
    ...(port > 0 && port < 65535 && { tlsPort: guestTlsPort(port) }),
    createdAt,
  };
}

/** True when the instance carries this provider's ownership labels for `installationId`. */
export function ownedBy(gce: GceInstance, installationId: string): boolean {
  return gce.labels?.[LABELS.managed] === 'true' && gce.labels[LABELS.installation] === installationId;
}

/** The ownership labels of a new instance; values that GCE would refuse are a PermanentError. */
export function labelsFor(spec: InstanceSpec, provider: string, port: number): Record<string, string> {
  const labels = {
    [LABELS.managed]: 'true',
    [LABELS.installation]: spec.installationId,
    [LABELS.provider]: provider,
    [LABELS.proxy]: spec.proxy,
    [LABELS.specHash]: spec.specHash,
    [LABELS.port]: String(port),
  };
  for (const [key, value] of Object.entries(labels)) {
    if (!LABEL_VALUE.test(value)) throw new PermanentError(`"${value}" is not a valid GCE label value for ${key}`);
  }
  return labels;
}

/** The `instances.insert` body: one VM with an ephemeral external IP, the fenced proxy in user-data, no service account. */
export function instanceResource(
  spec: InstanceSpec,
  placement: GcpPlacement,
  provider: string,
  port: number,
  egress: EgressPolicy,
): protos.google.cloud.compute.v1.IInstance {
  const zonePath = `zones/${placement.zone}`;
  return {
    name: spec.name,
    description: `egress proxy ${spec.proxy}`,
    machineType: `${zonePath}/machineTypes/${placement.machineType}`,
    labels: labelsFor(spec, provider, port),
    tags: { items: placement.tags },
    metadata: {
      items: [
        {
          key: 'user-data',
          value: buildUserData({ instance: spec.name, proxy: spec.proxy, port, credentials: spec.credentials, egress }),
        },
        // The VM reports readiness through a guest attribute (READY_ATTRIBUTE).
        { key: 'enable-guest-attributes', value: 'TRUE' },
      ],
    },
    disks: [
      {
        boot: true,
        // Rule delete-idempotent: deleting the instance deletes everything it owns.
        autoDelete: true,
        initializeParams: { sourceImage: placement.image, diskSizeGb: String(placement.diskSizeGb) },
      },
    ],
    networkInterfaces: [
      {
        // A subnetwork implies its network; naming `network` too sends `default`, which a Shared-VPC
        // or custom-VPC project may not have (instances.insert: networkInterfaces[].network is
        // optional when subnetwork is given, https://cloud.google.com/compute/docs/reference/rest/v1/instances/insert).
        ...(placement.subnetwork ? { subnetwork: placement.subnetwork } : { network: placement.network }),
        accessConfigs: [{ name: 'External NAT', type: 'ONE_TO_ONE_NAT' }],
      },
    ],
    // No service account: the proxy needs no Google API access.
    serviceAccounts: [],
    scheduling: placement.spot
      ? { provisioningModel: 'SPOT', instanceTerminationAction: 'DELETE', automaticRestart: false }
      : { provisioningModel: 'STANDARD', automaticRestart: true, onHostMaintenance: 'MIGRATE' },
  };
}

const HEX16 = /^[0-9a-f]{16}$/;
const OURS = /^([0-9a-f]{8})-([0-9a-f]{4})-4([0-9a-f]{3})-[89ab]([0-9a-f])[0-9a-f]{2}-e9e5[0-9a-f]{8}$/;

/**
 * The insert's `requestId`: a version-4 UUID that also carries the spec hash, so an insert that
 * fails after `create` returned can still be reported against the spec it was for (its operation's
 * `clientOperationId`), from any function instance. Random bits keep each attempt distinct.
 */
export function requestIdFor(specHash: string): string {
  const r = randomBytes(10).toString('hex');
  const carries = HEX16.test(specHash);
  const h = carries ? specHash : r.slice(0, 16);
  const variant = '89ab'.charAt(randomBytes(1).readUInt8() % 4);
  const random = r.slice(4, 16).startsWith('e9e5') ? `0${r.slice(5, 16)}` : r.slice(4, 16);
  const tail = carries ? `e9e5${r.slice(0, 8)}` : random;
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(12, 15)}-${variant}${h.slice(15, 16)}${r.slice(16, 18)}-${tail}`;
}

/** The spec hash a `requestIdFor` UUID carries, or undefined for any other id. */
export function specHashOfRequestId(id: string | null | undefined): string | undefined {
  const m = OURS.exec(id ?? '');
  return m ? `${m[1]}${m[2]}${m[3]}${m[4]}` : undefined;
}
