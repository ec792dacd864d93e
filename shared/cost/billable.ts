/** What one proxy of a provider puts on a bill: the shape each provider type's `billable` returns. */

/** A Compute Engine VM: its machine, its in-use external IPv4 addresses and its boot disk. */
export interface VmBillable {
  kind: 'vm';
  region: string;
  machineType: string;
  spot: boolean;
  externalIpv4: number;
  bootDisk: { type: string; gib: number };
  /** The fields the zone and machine type came from, named when the catalogue lacks a price. */
  fields: { zone: string; machineType: string };
}

/** A Pod on a cluster the user runs: its requests, billed as the cluster's nodes. */
export interface PodBillable {
  kind: 'pod';
  requests: { cpu?: string | undefined; memory?: string | undefined };
}

/** A proxy on hardware the user owns (a relay's host or its guests): no cloud bill. */
export interface OnPremBillable {
  kind: 'on-prem';
}

export type Billable = VmBillable | PodBillable | OnPremBillable;
