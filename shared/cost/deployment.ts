/**
 * What a deployment of infra/terraform runs besides the proxies and the functions, at its
 * defaults: the Serverless VPC Access connector the functions probe through (network.tf, created
 * when a gcp or kubernetes provider is configured; billed as its Compute Engine instances) and the
 * echo VM (echo.tf, `echo = null` removes it). infra/terraform/deployment-cost.test.ts checks these
 * figures against the .tf files.
 */
import { diskGibMonth, machineHourly, type Catalogue } from './catalogue.js';

export const DEPLOYMENT = {
  /** variables.tf `region`'s default. */
  region: 'us-central1',
  /** google_vpc_access_connector: min_instances, and the provider's default machine_type. */
  connector: { machineType: 'e2-micro', minInstances: 2 },
  /** google_compute_instance.echo with its static address (in use) and boot disk. */
  echo: { machineType: 'e2-micro', diskType: 'pd-standard', diskGib: 10 },
} as const;

/** One fixed line of the bill. */
export interface DeploymentLine {
  what: string;
  quantity: string;
  monthlyUsd: number;
}

/** The connector (when the functions probe VMs or Pods themselves) and the echo VM, a month each. */
export function deploymentLines(catalogue: Catalogue, parts: { connector: boolean; echo: boolean }): DeploymentLine[] {
  const { region, connector, echo } = DEPLOYMENT;
  const hours = catalogue.hoursPerMonth;
  const field = { zone: 'region (Terraform)', machineType: 'machine type (Terraform)' };
  const lines: DeploymentLine[] = [];
  if (parts.connector)
    lines.push({
      what: `VPC connector ${connector.machineType}, ${region}`,
      quantity: `${connector.minInstances} instances`,
      monthlyUsd:
        connector.minInstances * hours * machineHourly(catalogue, region, connector.machineType, false, field),
    });
  if (parts.echo)
    lines.push({
      what: `echo VM ${echo.machineType} + address + ${echo.diskGib} GiB ${echo.diskType}, ${region}`,
      quantity: '1 VMs',
      monthlyUsd:
        hours * machineHourly(catalogue, region, echo.machineType, false, field) +
        hours * catalogue.externalIpv4.hourlyStandard +
        echo.diskGib * diskGibMonth(catalogue, region, echo.diskType, field.zone),
    });
  return lines;
}
