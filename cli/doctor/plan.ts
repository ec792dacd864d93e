/**
 * What the project must offer before `terraform apply`, derived from the files the deployment is
 * made of: the APIs `infra/terraform/main.tf` enables, the relay subscriptions and service accounts
 * Terraform names (`infra/topology.yaml`, `infra/terraform/variables.tf`), and the fleet's VMs
 * from the providers config.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import type { Config } from '../../shared/config/schema.js';
import type { VmFootprint } from '../../shared/domain/footprint.js';

/** A VM shape of the fleet and how many of it. */
export interface VmNeed {
  vm: VmFootprint;
  count: number;
}

export interface DoctorPlan {
  /** The project of the functions, Pub/Sub and Firestore (the config's `project`). */
  project: string;
  /** Services `google_project_service.apis` enables. */
  apis: string[];
  /** `api_public = true`: the API is granted to allUsers. */
  apiPublic: boolean;
  vms: VmNeed[];
  relays: { id: string; subscription: string; serviceAccount: string }[];
  /** The range the functions reach the proxies from (VPC connector or Direct VPC egress), if given. */
  functionsRange?: string | undefined;
}

/** The one key of infra/topology.yaml doctor reads. */
const topologySchema = z.object({ relaySubscription: z.object({ namePrefix: z.string() }) });

function read(dir: string, file: string, flag: string): string {
  try {
    return readFileSync(join(dir, file), 'utf8');
  } catch (err) {
    throw new Error(`${flag}: cannot read ${join(dir, file)}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/**
 * The service names of `resource "google_project_service" "apis"`'s `for_each = toset([...])` in
 * main.tf: a literal list of strings, read without a Terraform parser (a test checks the result
 * against HashiCorp's parser).
 *
 * @throws Error when the block or its list is not found
 */
export function requiredApis(mainTf: string): string[] {
  const block = /resource\s+"google_project_service"\s+"apis"\s*\{[\s\S]*?toset\(\[([\s\S]*?)\]\)/.exec(mainTf);
  if (!block?.[1]) throw new Error('main.tf: no resource "google_project_service" "apis" with for_each = toset([...])');
  return [...block[1].matchAll(/"([a-z0-9.-]+\.googleapis\.com)"/g)].map((m) => m[1] ?? '');
}

/** A variable's literal string default in variables.tf (`name_prefix` → "egress-"). */
export function variableDefault(variablesTf: string, name: string): string {
  const m = new RegExp(`variable\\s+"${name}"\\s*\\{[^}]*?default\\s*=\\s*"([^"]*)"`).exec(variablesTf);
  if (m?.[1] === undefined) throw new Error(`variables.tf: variable "${name}" has no string default`);
  return m[1];
}

/**
 * The VPC connector's range Terraform creates by default (variables.tf `vpc_connector`,
 * `ip_cidr_range = optional(string, "…")`): the functions' source range towards the proxies.
 */
export function connectorRangeDefault(variablesTf: string): string {
  const m = /variable\s+"vpc_connector"\s*\{[\s\S]*?ip_cidr_range\s*=\s*optional\(string,\s*"([^"]+)"\)/.exec(
    variablesTf,
  );
  if (!m?.[1]) throw new Error('variables.tf: variable "vpc_connector" has no ip_cidr_range default');
  return m[1];
}

/**
 * @param infraDir - the repository's `infra/` (`--infra`)
 * @param vms - the fleet's VMs
 * @throws Error naming `--infra` when a file cannot be read
 */
export function makePlan(
  config: Config,
  infraDir: string,
  vms: VmNeed[],
  flags: { apiPublic: boolean; functionsRange?: string | undefined },
): DoctorPlan {
  const apis = requiredApis(read(infraDir, 'terraform/main.tf', '--infra'));
  const topology = topologySchema.safeParse(parseYaml(read(infraDir, 'topology.yaml', '--infra')));
  if (!topology.success) throw new Error('--infra: topology.yaml has no relaySubscription.namePrefix');
  const prefix = topology.data.relaySubscription.namePrefix;
  const variablesTf = read(infraDir, 'terraform/variables.tf', '--infra');
  const namePrefix = variableDefault(variablesTf, 'name_prefix');
  const relayIds = [...new Set(config.providers.flatMap((p) => (p.relay ? [p.relay] : [])))];
  return {
    project: config.project,
    apis,
    apiPublic: flags.apiPublic,
    vms,
    relays: relayIds.map((id) => ({
      id,
      subscription: `${prefix}${id}`,
      serviceAccount: `${namePrefix}relay-${id}@${config.project}.iam.gserviceaccount.com`,
    })),
    // The functions reach the proxies from the connector's range: Terraform's default unless given.
    functionsRange: flags.functionsRange ?? connectorRangeDefault(variablesTf),
  };
}
