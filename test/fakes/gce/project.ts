/**
 * What `egress doctor` reads of a project's Compute set-up: a network (networks.get), the firewall
 * rules (firewalls.list) and a region's quotas (regions.get), rendered as the REST reference shows:
 * - https://cloud.google.com/compute/docs/reference/rest/v1/networks/get: the Network, with
 *   `autoCreateSubnetworks` and `subnetworks[]`; `404 notFound` when the project has none of that name.
 * - https://cloud.google.com/compute/docs/reference/rest/v1/firewalls/list: `{items: Firewall[]}`,
 *   each with `network` (URL), `direction`, `disabled`, `sourceRanges`, `targetTags` and
 *   `allowed[{IPProtocol, ports}]`; `filter` and paging are not needed by doctor and not served.
 * - https://cloud.google.com/compute/docs/reference/rest/v1/regions/get: the Region with
 *   `quotas[{metric, limit, usage}]` (metrics as in the Quota reference: CPUS, IN_USE_ADDRESSES, …).
 *   Usage is what the fake's VMs in that region hold: one in-use address and the machine type's
 *   guest CPUs each.
 */
import { MACHINE_TYPES, ZONES } from './catalog.js';
import { notFound } from './errors.js';
import type { FakeNetwork } from './networks.js';
import type { Vm } from './resources.js';

const BASE = 'https://www.googleapis.com/compute/v1';

/** One VPC firewall rule (ingress, allow). */
export interface FakeFirewall {
  project?: string | undefined;
  name: string;
  network: string;
  sourceRanges: string[];
  /** Empty: every instance of the network. */
  targetTags?: string[] | undefined;
  /** `tcp:3128`, `tcp:3000-4000`, `tcp` (every port). */
  allow: string[];
  disabled?: boolean | undefined;
}

/** Regional quota limits by region and metric; a metric not given has room for anything. */
export type FakeQuotas = Record<string, Partial<Record<'CPUS' | 'IN_USE_ADDRESSES', number>>>;

export function networkJson(networks: FakeNetwork[], project: string, name: string): Record<string, unknown> {
  const network = networks.find((n) => n.name === name && (n.project ?? project) === project);
  if (!network) throw notFound(`projects/${project}/global/networks/${name}`);
  return {
    kind: 'compute#network',
    name,
    selfLink: `${BASE}/projects/${project}/global/networks/${name}`,
    autoCreateSubnetworks: network.auto === true,
    subnetworks: (network.subnetworks ?? []).map((s) => {
      const [region, sub] = s.split('/');
      return `${BASE}/projects/${project}/regions/${region}/subnetworks/${sub}`;
    }),
  };
}

export function firewallsJson(firewalls: FakeFirewall[], project: string): Record<string, unknown> {
  return {
    kind: 'compute#firewallList',
    items: firewalls
      .filter((f) => (f.project ?? project) === project)
      .map((f) => ({
        kind: 'compute#firewall',
        name: f.name,
        network: `${BASE}/projects/${project}/global/networks/${f.network}`,
        direction: 'INGRESS',
        priority: 1000,
        disabled: f.disabled === true,
        sourceRanges: f.sourceRanges,
        ...(f.targetTags && { targetTags: f.targetTags }),
        allowed: f.allow.map((a) => {
          const [protocol, ports] = a.split(':');
          return { IPProtocol: protocol, ...(ports && { ports: [ports] }) };
        }),
      })),
  };
}

export function regionJson(
  quotas: FakeQuotas,
  vms: Iterable<Vm>,
  project: string,
  region: string,
): Record<string, unknown> {
  if (!ZONES[region]) throw notFound(`projects/${project}/regions/${region}`);
  const here = [...vms].filter((vm) => vm.project === project && (ZONES[region] ?? []).includes(vm.zone));
  const machineType = (vm: Vm) =>
    String(vm.body.machineType ?? '')
      .split('/')
      .pop() ?? '';
  const usage = {
    CPUS: here.reduce((n, vm) => n + (MACHINE_TYPES[machineType(vm)]?.guestCpus ?? 0), 0),
    IN_USE_ADDRESSES: here.filter((vm) => vm.natIP !== '').length,
  };
  const limits = quotas[region] ?? {};
  return {
    kind: 'compute#region',
    name: region,
    status: 'UP',
    selfLink: `${BASE}/projects/${project}/regions/${region}`,
    zones: (ZONES[region] ?? []).map((z) => `${BASE}/projects/${project}/zones/${z}`),
    quotas: (['CPUS', 'IN_USE_ADDRESSES'] as const).map((metric) => ({
      metric,
      limit: limits[metric] ?? 100_000,
      usage: usage[metric],
    })),
  };
}
