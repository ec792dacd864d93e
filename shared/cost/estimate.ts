/** The monthly estimate of a fleet: its VMs, addresses, disks and Internet egress at catalogue prices, and the control plane. */
import type { Footprint } from '../domain/footprint.js';
import { egressMonthly, vmRates, type Catalogue } from './catalogue.js';
import { CONTROL_PLANE, controlPlaneMonthly, type ControlPlaneFigures } from './control-plane.js';
import { deploymentLines } from './deployment.js';

/** `count` proxies that each bill as `footprint`. */
export interface FleetItem {
  footprint: Footprint;
  count: number;
}

/** One line of the bill. */
export interface CostLine {
  what: string;
  quantity: string;
  monthlyUsd: number;
}

export interface Estimate {
  lines: CostLine[];
  /** What the total leaves out or assumes, in words. */
  notes: string[];
  totalUsd: number;
}

export interface EstimateInput {
  fleet: FleetItem[];
  /** Internet egress of the whole fleet a month, spread evenly over its proxies. */
  egressGib: number;
  checkIntervalSeconds: number;
  catalogue: Catalogue;
  controlPlane?: ControlPlaneFigures;
  /** The deployment's own fixed parts (shared/cost/deployment.ts); none when absent. */
  deployment?: { connector: boolean; echo: boolean };
}

/** Adds `monthly` to the line keyed `what`, counting `amount` more of it. */
function tally(
  lines: Map<string, { amount: number; unit: string; monthlyUsd: number }>,
  what: string,
  amount: number,
  unit: string,
  monthlyUsd: number,
) {
  const line = lines.get(what) ?? { amount: 0, unit, monthlyUsd: 0 };
  line.amount += amount;
  line.monthlyUsd += monthlyUsd;
  lines.set(what, line);
}

/**
 * @returns the bill's lines (VMs by machine type and region, addresses, disks, egress, control
 *   plane), notes on what is not priced, and the total
 * @throws ValidationError naming the zone or machine type field the catalogue has no price for
 */
export function estimate(input: EstimateInput): Estimate {
  const { catalogue } = input;
  const hours = catalogue.hoursPerMonth;
  const lines = new Map<string, { amount: number; unit: string; monthlyUsd: number }>();
  const proxies = input.fleet.reduce((n, item) => n + item.count, 0);
  const egressPerProxy = proxies === 0 ? 0 : input.egressGib / proxies;
  let vmEgressGib = 0;
  const counts = { vm: 0, pod: 0, 'on-prem': 0 };
  const pods: string[] = [];
  for (const { footprint, count } of input.fleet) {
    counts[footprint.kind] += count;
    if (footprint.kind === 'pod') {
      pods.push(`${count} × cpu ${footprint.requests.cpu ?? 'none'}, memory ${footprint.requests.memory ?? 'none'}`);
      continue;
    }
    if (footprint.kind !== 'vm') continue;
    const { region, machineType, spot } = footprint;
    const rates = vmRates(catalogue, footprint);
    tally(
      lines,
      `VM ${machineType} ${spot ? 'Spot' : 'on-demand'}, ${region}`,
      count,
      'VMs',
      count * hours * rates.machineHourly,
    );
    tally(
      lines,
      `external IPv4 in use${spot ? ' (Spot VM)' : ''}`,
      count * footprint.externalIpv4,
      'addresses',
      count * footprint.externalIpv4 * hours * rates.ipv4Hourly,
    );
    const gib = count * footprint.bootDisk.gib;
    tally(lines, `boot disk ${footprint.bootDisk.type}, ${region}`, gib, 'GiB', gib * rates.diskGibMonth);
    vmEgressGib += count * egressPerProxy;
  }
  if (vmEgressGib > 0)
    tally(lines, 'Internet egress, Premium Tier', vmEgressGib, 'GiB', egressMonthly(catalogue, vmEgressGib));
  const directlyProbed = counts.vm + counts.pod;
  const controlPlane = controlPlaneMonthly(
    directlyProbed,
    counts['on-prem'],
    input.checkIntervalSeconds,
    input.controlPlane,
  );
  const figures = input.controlPlane ?? CONTROL_PLANE;
  tally(lines, `control plane (bench of ${figures.measuredOn})`, proxies, 'proxies', controlPlane);
  const fixed = deploymentLines(catalogue, input.deployment ?? { connector: false, echo: false });

  const notes = [
    `Prices: the catalogue of ${catalogue.recordedOn} (shared/cost/prices-2026-12.json, each price with its source; Spot and europe-west1 VM prices unconfirmed), ${hours} hours a month, no free tier or committed-use discount on VMs.`,
    `Control plane: Firestore, Pub/Sub and Cloud Run functions as npm run bench measured them on ${figures.measuredOn} at 1,000 and 10,000 proxies (docs/performance.md), read off for ${directlyProbed} directly probed and ${counts['on-prem']} relay-backed proxies at a ${input.checkIntervalSeconds}-s check interval.`,
  ];
  if (counts.pod > 0)
    notes.push(
      `kubernetes: ${counts.pod} Pods (requests ${pods.join('; ')}) take room on the cluster's nodes: the nodes, their addresses and the Pods' ${(counts.pod * egressPerProxy).toFixed(0)} GiB of egress are the cluster's bill, not priced here.`,
    );
  if (counts['on-prem'] > 0)
    notes.push(
      `process/kvm: ${counts['on-prem']} proxies on your own hosts: no cloud cost; their ${(counts['on-prem'] * egressPerProxy).toFixed(0)} GiB of egress goes out through your site's uplink.`,
    );
  if (fixed.length > 0)
    notes.push(
      `Deployment: infra/terraform's defaults (region us-central1; the VPC connector at its minimum, when a gcp or kubernetes provider is configured; the echo VM, unless echo = null).`,
    );
  const out = [
    ...[...lines].map(([what, l]) => ({
      what,
      quantity: `${Number.isInteger(l.amount) ? l.amount : l.amount.toFixed(1)} ${l.unit}`,
      monthlyUsd: l.monthlyUsd,
    })),
    ...fixed,
  ];
  return { lines: out, notes, totalUsd: out.reduce((s, l) => s + l.monthlyUsd, 0) };
}
