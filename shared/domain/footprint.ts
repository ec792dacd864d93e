/** What one proxy of a provider occupies in a cloud (what it is billed for, what it needs of the project): the shape each provider type's footprint has. */

/** A Compute Engine VM: its machine, its in-use external IPv4 addresses, its boot disk and its network path. */
export interface VmFootprint {
  kind: 'vm';
  project: string;
  zone: string;
  region: string;
  machineType: string;
  spot: boolean;
  externalIpv4: number;
  bootDisk: { type: string; gib: number };
  /** `global/networks/N` (or with `projects/P/`), and the subnetwork when one is named. */
  network: string;
  subnetwork?: string | undefined;
  /** Network tags: the firewall rule opening the proxy port targets them. */
  tags: string[];
  /** The proxy port a request with `port: 0` gets. */
  port: number;
  /** The fields the zone and machine type came from, named when the catalogue lacks a price. */
  fields: { zone: string; machineType: string };
}

/** A Pod on a cluster the user runs: its requests, billed as the cluster's nodes. */
export interface PodFootprint {
  kind: 'pod';
  requests: { cpu?: string | undefined; memory?: string | undefined };
}

/** A proxy on hardware the user owns (a relay's host or its guests) or a vendor runs (a static endpoint): no cloud bill. */
export interface OnPremFootprint {
  kind: 'on-prem';
  /** USD an hour the config states for it (a static endpoint's `hourlyUsd`); none: not priced. */
  hourlyUsd?: number | undefined;
}

export type Footprint = VmFootprint | PodFootprint | OnPremFootprint;
