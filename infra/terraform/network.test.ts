/** infra/terraform: the functions reach the proxies over the VPC, the firewall admits only that path and the clients, the API is private. */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { parseGcpOptions } from '../../shared/providers/gcp/options.js';
import { findTopologyFile, loadTopology } from '../local/topology.js';
import { readTerraformDir, type TerraformDir } from './hcl-files.js';

const dir = join(findTopologyFile(), '..', 'terraform');
let tf: TerraformDir;

beforeAll(async () => {
  tf = await readTerraformDir(dir);
}, 30_000);

const resource = (address: string) => z.record(z.string(), z.unknown()).parse(tf.resources.get(address));
const variable = (name: string) =>
  z
    .record(z.string(), z.tuple([z.looseObject({ default: z.unknown().optional() })]))
    .parse(tf.files.get('variables.tf')?.['variable'])[name]?.[0];
const local = (file: string, name: string) =>
  z.tuple([z.record(z.string(), z.unknown())]).parse(tf.files.get(file)?.['locals'])[0][name];
const rendered = () =>
  z
    .object({
      locals: z.object({
        relay_types: z.array(z.string()),
        topology_functions: z.record(z.string(), z.looseObject({ calls_providers: z.boolean() })),
      }),
    })
    .parse(JSON.parse(JSON.stringify(tf.files.get('topology.auto.tf.json'))));
const validation = (name: string) =>
  z
    .array(z.object({ condition: z.string(), error_message: z.string() }))
    .parse(z.looseObject({ validation: z.unknown() }).parse(variable(name)).validation);
/** The functions that call providers: functions.tf's provider_functions is those the topology marks. */
const providerFunctions = () => {
  expect(local('functions.tf', 'provider_functions')).toBe(
    '${toset([for name, f in local.functions : name if f.calls_providers])}',
  );
  return Object.entries(rendered().locals.topology_functions)
    .filter(([, f]) => f.calls_providers)
    .map(([name]) => name);
};

describe('network: the functions reach the proxies over the VPC', () => {
  it('the probe reaches the internal address: gcp probes a VM at its networkIP by default, through a connector Terraform creates', () => {
    expect(parseGcpOptions({ project: 'my-project', zone: 'us-central1-a' }, 'p').probeVia).toBe('internal');
    // The connector exists whenever a provider the functions probe themselves (not relay-backed) is configured.
    expect(resource('google_vpc_access_connector.functions')['count']).toBe('${local.vpc_probed ? 1 : 0}');
    expect(local('network.tf', 'vpc_probed')).toBe(
      '${length([for p in local.config.providers : p if !contains(local.relay_types, p.type)]) > 0}',
    );
    expect(rendered().locals.relay_types).not.toContain('gcp');
    expect(rendered().locals.relay_types).not.toContain('kubernetes');
    // Nothing to set: the connector's variable has a default and cannot be null.
    expect(variable('vpc_connector')).toMatchObject({ default: {}, nullable: false });
    expect(providerFunctions()).toEqual(expect.arrayContaining(['requests', 'check']));
    const service = z
      .object({ service_config: z.tuple([z.looseObject({ vpc_connector: z.string() })]) })
      .parse(resource('google_cloudfunctions2_function.fn')).service_config[0];
    expect(service.vpc_connector).toBe(
      '${contains(local.provider_functions, each.key) ? one(google_vpc_access_connector.functions[*].id) : null}',
    );
  });

  it('the connector carries private ranges only: the functions’ other traffic leaves as before', () => {
    expect(String(variable('vpc_connector')?.['type'])).toContain(
      'egress        = optional(string, "PRIVATE_RANGES_ONLY")',
    );
    const service = z
      .object({ service_config: z.tuple([z.looseObject({ vpc_connector_egress_settings: z.string() })]) })
      .parse(resource('google_cloudfunctions2_function.fn')).service_config[0];
    expect(service.vpc_connector_egress_settings).toBe(
      '${contains(local.provider_functions, each.key) && local.vpc_probed ? var.vpc_connector.egress : null}',
    );
  });

  it('the firewall admits the functions’ range (the connector’s) and the clients’ ranges, nothing else', () => {
    expect(local('network.tf', 'functions_range')).toBe('${var.vpc_connector.ip_cidr_range}');
    expect(resource('google_vpc_access_connector.functions')['ip_cidr_range']).toBe('${local.functions_range}');
    expect(resource('google_compute_firewall.proxy')).toMatchObject({
      direction: 'INGRESS',
      source_ranges: '${distinct(concat([local.functions_range], var.proxy_source_ranges))}',
    });
    // Pod IPs are reachable only inside the VPC: the connector's range, to the Pod ranges, on the proxy ports.
    expect(resource('google_compute_firewall.pods')).toMatchObject({
      direction: 'INGRESS',
      source_ranges: ['${local.functions_range}'],
      destination_ranges: '${var.kubernetes_pod_ranges}',
      network: '${var.vpc_connector.network}',
      // The probe goes through each Pod's TLS listener on the proxy port's next one.
      allow: [
        {
          protocol: 'tcp',
          ports:
            '${distinct(flatten([for p in concat(local.kubernetes_ports, var.proxy_extra_ports) : [p, tostring(tonumber(p) + 1)]]))}',
        },
      ],
    });
    expect(String(variable('proxy_source_ranges')?.['description'])).not.toMatch(/check function's egress/);
  });
});

describe('api access', () => {
  it('api is private by default: allUsers only with api_public, the members of api_invokers otherwise', () => {
    expect(variable('api_public')?.default).toBe(false);
    expect(resource('google_cloud_run_v2_service_iam_member.api_public')['count']).toBe('${var.api_public ? 1 : 0}');
    expect(resource('google_cloud_run_v2_service_iam_member.api_invoker')).toMatchObject({
      for_each: '${toset(var.api_invokers)}',
      role: 'roles/run.invoker',
      member: '${each.value}',
    });
    expect(variable('api_invokers')?.default).toEqual([]);
  });

  it('api_invokers refuses what Cloud Run IAM would not take as a member, naming the field', () => {
    const [rule] = validation('api_invokers');
    expect(rule?.error_message).toMatch(/^api_invokers: /);
    // The condition's RE2 pattern, read back from the HCL string (its escapes are JSON's).
    const pattern = /regex\((".*?[^\\]"), m\)/.exec(rule?.condition ?? '')?.[1] ?? '""';
    const member = new RegExp(z.string().parse(JSON.parse(pattern)));
    for (const ok of [
      'user:alice@example.com',
      'group:egress-users@example.com',
      'serviceAccount:gateway@my-project.iam.gserviceaccount.com',
      'domain:example.com',
      'principalSet://iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/*',
    ])
      expect(member.test(ok), ok).toBe(true);
    for (const bad of ['allUsers', 'allAuthenticatedUsers', 'alice@example.com', 'user:', 'user:a b@example.com'])
      expect(member.test(bad), bad).toBe(false);
  });
});

describe('function memory', () => {
  it('the functions that call providers (and so load the ~185 MB Compute client) have 512 MB or more', () => {
    const functions = loadTopology().functions;
    for (const name of providerFunctions()) expect(functions[name]?.memoryMb, name).toBeGreaterThanOrEqual(512);
  });
});
