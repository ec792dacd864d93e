/**
 * Doctor's checks: each reads one part of the project against the plan and says, per finding, what
 * will fail and the command that fixes it. A check that cannot read its part reports that instead.
 */
import type { DoctorPlan, VmNeed } from './plan.js';
import type { Firewall, PolicyRule, ProjectReader } from './google.js';

export interface Finding {
  /** The check's name (`apis`, `org-policy`, `network`, `quota`, `firewall`, `relay`). */
  check: string;
  /** What will fail, in words. */
  problem: string;
  /** Commands or URLs that fix it, in order. */
  fix: string[];
}

type Check = (plan: DoctorPlan, reader: ProjectReader) => Promise<Finding[]>;

async function apis(plan: DoctorPlan, reader: ProjectReader): Promise<Finding[]> {
  const state = await reader.services(plan.project, plan.apis);
  const off = plan.apis.filter((a) => state.get(a) !== true);
  if (off.length === 0) return [];
  return [
    {
      check: 'apis',
      problem: `${off.length} API(s) infra/terraform/main.tf needs are not enabled in ${plan.project}: ${off.join(', ')}; resources that need them fail on the first apply`,
      fix: [`gcloud services enable ${off.join(' ')} --project=${plan.project}`],
    },
  ];
}

const enforced = (rules: PolicyRule[]) => rules.some((r) => r.enforce === true);
/** A list constraint leaves a new VM's external IP out unless it allows all (no instance list names it yet). */
const listBlocks = (rules: PolicyRule[]) =>
  !rules.some((r) => r.allowAll === true) &&
  rules.some((r) => r.denyAll === true || (r.values?.allowedValues?.length ?? 0) > 0);
const listRestricts = (rules: PolicyRule[]) =>
  rules.some((r) => r.denyAll === true || (r.values?.allowedValues?.length ?? 0) > 0);

function allowAllFix(project: string, constraint: string): string {
  return `printf 'name: projects/${project}/policies/${constraint}\\nspec:\\n  rules:\\n  - allowAll: true\\n' > policy.yaml && gcloud org-policies set-policy policy.yaml`;
}

async function orgPolicies(plan: DoctorPlan, reader: ProjectReader): Promise<Finding[]> {
  const out: Finding[] = [];
  const gcpProjects = [...new Set(plan.vms.map((v) => v.vm.project))];
  for (const project of gcpProjects) {
    if (listBlocks(await reader.effectivePolicy(project, 'compute.vmExternalIpAccess')))
      out.push({
        check: 'org-policy',
        problem: `compute.vmExternalIpAccess refuses external IPs in ${project}: every gcp proxy VM has one, so instances.insert fails (the proxies stay Pending, then Failed)`,
        fix: [allowAllFix(project, 'compute.vmExternalIpAccess')],
      });
  }
  if (plan.relays.length > 0) {
    const keysBlocked = enforced(await reader.effectivePolicy(plan.project, 'iam.disableServiceAccountKeyCreation'));
    if (keysBlocked && (await reader.workloadIdentityPools(plan.project)) === 0)
      out.push({
        check: 'org-policy',
        problem: `iam.disableServiceAccountKeyCreation is enforced in ${plan.project} and it has no Workload Identity pool: the relays' service account keys cannot be created, so no relay can pull its commands`,
        fix: [
          `gcloud resource-manager org-policies disable-enforce iam.disableServiceAccountKeyCreation --project=${plan.project}`,
          'or keyless: a Workload Identity Federation credential file in GOOGLE_APPLICATION_CREDENTIALS on the relay host (docs/deploy.md, "6. The relay")',
        ],
      });
  }
  if (plan.apiPublic && listRestricts(await reader.effectivePolicy(plan.project, 'iam.allowedPolicyMemberDomains')))
    out.push({
      check: 'org-policy',
      problem: `iam.allowedPolicyMemberDomains restricts members in ${plan.project}: api_public = true grants the api function to allUsers, which the apply is refused`,
      fix: [
        'set api_public = false in terraform.tfvars (the default): clients then send a Google ID token (docs/deploy.md)',
      ],
    });
  return out;
}

/** `global/networks/N` or `projects/P/global/networks/N` → `{ project, name }`. */
function networkOf(need: VmNeed): { project: string; name: string } {
  const m = /(?:projects\/([^/]+)\/)?global\/networks\/([^/]+)$/.exec(need.vm.network);
  return { project: m?.[1] ?? need.vm.project, name: m?.[2] ?? need.vm.network };
}

async function networks(plan: DoctorPlan, reader: ProjectReader): Promise<Finding[]> {
  const out: Finding[] = [];
  const seen = new Set<string>();
  for (const need of plan.vms) {
    if (need.vm.subnetwork) continue;
    const { project, name } = networkOf(need);
    if (seen.has(`${project}/${name}`)) continue;
    seen.add(`${project}/${name}`);
    if (!(await reader.networkExists(project, name)))
      out.push({
        check: 'network',
        problem: `network ${name} does not exist in ${project}: instances.insert of every gcp proxy fails ("The referenced network resource cannot be found")`,
        fix: [
          `gcloud compute networks create ${name} --subnet-mode=auto --project=${project}`,
          `or name an existing network in the provider's options.network (or options.subnetwork)`,
        ],
      });
  }
  return out;
}

async function quotas(plan: DoctorPlan, reader: ProjectReader): Promise<Finding[]> {
  const need = new Map<string, { project: string; region: string; addresses: number; cpus: number }>();
  for (const { vm, count } of plan.vms) {
    const key = `${vm.project}/${vm.region}`;
    const entry = need.get(key) ?? { project: vm.project, region: vm.region, addresses: 0, cpus: 0 };
    entry.addresses += count * vm.externalIpv4;
    entry.cpus += count * (await reader.guestCpus(vm.project, vm.zone, vm.machineType));
    need.set(key, entry);
  }
  const out: Finding[] = [];
  for (const { project, region, addresses, cpus } of need.values()) {
    const quota = await reader.regionQuotas(project, region);
    for (const [metric, wanted] of [
      ['IN_USE_ADDRESSES', addresses],
      ['CPUS', cpus],
    ] as const) {
      const q = quota.get(metric);
      if (!q || q.limit - q.usage >= wanted) continue;
      out.push({
        check: 'quota',
        problem: `${metric} in ${region} of ${project}: the fleet needs ${wanted}, the quota leaves ${q.limit - q.usage} (limit ${q.limit}, in use ${q.usage}); creates beyond it fail with QUOTA_EXCEEDED`,
        fix: [
          `request a limit of at least ${q.usage + wanted} for compute.googleapis.com/${metric.toLowerCase()} in ${region}: https://console.cloud.google.com/iam-admin/quotas?project=${project}`,
          `gcloud compute regions describe ${region} --project=${project} --flatten=quotas --filter="quotas.metric=${metric}"`,
        ],
      });
    }
  }
  return out;
}

const ipv4 = (ip: string) => ip.split('.').reduce((n, o) => n * 256 + Number(o), 0);
/** Whether CIDR `outer` contains all of CIDR `inner` (IPv4). */
export function cidrContains(outer: string, inner: string): boolean {
  const [oa = '', ob = '32'] = outer.split('/');
  const [ia = '', ib = '32'] = inner.split('/');
  const [op, ip] = [Number(ob), Number(ib)];
  if (ip < op) return false;
  const size = 2 ** (32 - op);
  return Math.floor(ipv4(oa) / size) === Math.floor(ipv4(ia) / size);
}

function admits(rule: Firewall, need: VmNeed, network: string, range: string | undefined): boolean {
  if (rule.disabled || (rule.direction ?? 'INGRESS') !== 'INGRESS') return false;
  if (!rule.network.endsWith(`/global/networks/${network}`)) return false;
  const tags = rule.targetTags ?? [];
  if (tags.length > 0 && !tags.some((t) => need.vm.tags.includes(t))) return false;
  const port = need.vm.port;
  const allows = (rule.allowed ?? []).some(
    (a) =>
      (a.IPProtocol === 'tcp' || a.IPProtocol === 'all') &&
      (!a.ports?.length ||
        a.ports.some((p) => {
          const [lo, hi = lo] = p.split('-').map(Number);
          return lo !== undefined && hi !== undefined && port >= lo && port <= hi;
        })),
  );
  if (!allows) return false;
  return range === undefined || (rule.sourceRanges ?? []).some((r) => cidrContains(r, range));
}

async function firewall(plan: DoctorPlan, reader: ProjectReader): Promise<Finding[]> {
  const out: Finding[] = [];
  const rules = new Map<string, Firewall[]>();
  const seen = new Set<string>();
  for (const need of plan.vms) {
    const { project, name } = networkOf(need);
    const key = `${project}/${name}/${need.vm.tags.join(',')}/${need.vm.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const list = rules.get(project) ?? (await reader.firewalls(project));
    rules.set(project, list);
    if (list.some((r) => admits(r, need, name, plan.functionsRange))) continue;
    const from = plan.functionsRange ?? 'the functions\u2019 range (--functions-range)';
    out.push({
      check: 'firewall',
      problem: `no firewall rule of network ${name} in ${project} admits ${from} to tcp:${need.vm.port} on tags ${need.vm.tags.join(',')}: the check function's probes time out and no gcp proxy becomes Ready`,
      fix: [
        `terraform apply creates it (network.tf: the VPC connector's range and proxy_source_ranges; docs/deploy.md, "Reaching the proxies"), or: gcloud compute firewall-rules create egress-proxy-${need.vm.port} --project=${project} --network=${name} --direction=INGRESS --allow=tcp:${need.vm.port} --target-tags=${need.vm.tags.join(',')} --source-ranges=${plan.functionsRange ?? 'RANGE'}`,
      ],
    });
  }
  return out;
}

async function relays(plan: DoctorPlan, reader: ProjectReader): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const relay of plan.relays) {
    if (!(await reader.subscriptionExists(plan.project, relay.subscription)))
      out.push({
        check: 'relay',
        problem: `relay ${relay.id}: its subscription ${relay.subscription} does not exist in ${plan.project}: the relay cannot pull, its providers go Unhealthy`,
        fix: ['terraform apply (it creates one subscription per relay id of the config)'],
      });
    const keys = await reader.serviceAccountKeys(plan.project, relay.serviceAccount);
    if (keys === undefined)
      out.push({
        check: 'relay',
        problem: `relay ${relay.id}: its service account ${relay.serviceAccount} does not exist`,
        fix: ['terraform apply (it creates one service account per relay id)'],
      });
    else if (keys === 0 && (await reader.workloadIdentityPools(plan.project)) === 0)
      out.push({
        check: 'relay',
        problem: `relay ${relay.id}: ${relay.serviceAccount} has no key and the project no Workload Identity pool: the relay host has no credential to pull with`,
        fix: [
          `gcloud iam service-accounts keys create key.json --iam-account=${relay.serviceAccount}`,
          'or keyless: Workload Identity Federation (docs/deploy.md, "6. The relay")',
        ],
      });
  }
  return out;
}

/** Every check, in the order a first deployment meets them. */
export const CHECKS: Record<string, Check> = {
  apis,
  'org-policy': orgPolicies,
  network: networks,
  quota: quotas,
  firewall,
  relay: relays,
};

/**
 * Runs every check; one that cannot read its part becomes a finding saying so.
 *
 * @returns the findings, in check order
 */
export async function diagnose(plan: DoctorPlan, reader: ProjectReader): Promise<Finding[]> {
  const out: Finding[] = [];
  for (const [name, check] of Object.entries(CHECKS)) {
    try {
      out.push(...(await check(plan, reader)));
    } catch (err) {
      out.push({
        check: name,
        problem: `could not read: ${err instanceof Error ? err.message : String(err)}`,
        fix: ['check the credentials (gcloud auth application-default login) and their roles/viewer on the project'],
      });
    }
  }
  return out;
}
