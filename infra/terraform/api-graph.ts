/**
 * Whether the first `terraform apply` on a fresh project can succeed in one run: every resource or
 * data source that calls a Google API depends, directly or through what it references (resources,
 * data sources, locals) or `depends_on`, on the `google_project_service` that enables that API.
 * Terraform orders operations by exactly these edges; without one it calls the API in parallel with
 * enabling it and fails with SERVICE_DISABLED until re-run.
 */
import { labelledBlocks, bodies, referencesIn, type TerraformDir } from './hcl-files.js';

/**
 * The API each type calls, keyed by the type or by a family's prefix ending in `_`. `null`: calls no
 * Google API of the project (local providers, and `google_project_service` itself, which Service
 * Usage serves, on in every project). Each resource's page on
 * registry.terraform.io/providers/hashicorp/google names the API it manages.
 */
export const API_OF_TYPE: Readonly<Record<string, string | null>> = {
  google_project_service: null,
  google_project: 'cloudresourcemanager.googleapis.com', // data source: projects.get
  google_project_iam_member: 'cloudresourcemanager.googleapis.com', // projects.getIamPolicy / setIamPolicy
  google_project_iam_custom_role: 'iam.googleapis.com',
  google_service_account: 'iam.googleapis.com',
  google_service_account_iam_member: 'iam.googleapis.com', // serviceAccounts.setIamPolicy
  google_pubsub_: 'pubsub.googleapis.com',
  google_cloud_scheduler_: 'cloudscheduler.googleapis.com',
  google_compute_: 'compute.googleapis.com',
  google_cloudfunctions2_: 'cloudfunctions.googleapis.com',
  google_cloud_run_v2_: 'run.googleapis.com',
  google_secret_manager_: 'secretmanager.googleapis.com',
  google_firestore_: 'firestore.googleapis.com',
  google_vpc_access_: 'vpcaccess.googleapis.com',
  google_storage_: 'storage.googleapis.com',
  archive_: null,
  random_: null,
};

/**
 * The API a type needs: its own entry, else the longest family (`google_pubsub_`) it belongs to.
 *
 * @returns the API, null for none, undefined when the type is not mapped (a finding itself)
 */
export function apiOf(type: string): string | null | undefined {
  if (type in API_OF_TYPE) return API_OF_TYPE[type];
  const family = Object.keys(API_OF_TYPE)
    .filter((k) => k.endsWith('_') && type.startsWith(k))
    .sort((a, b) => b.length - a.length)[0];
  return family === undefined ? undefined : API_OF_TYPE[family];
}

const SERVICE = 'google_project_service';

/** A reference as an address of the graph: `type.name`, `data.type.name`, `local.x`, with an instance key. */
function addressOf(reference: string): { address: string; key?: string } | undefined {
  // hcl2json writes an index as a quoted step: `google_project_service.apis."pubsub.googleapis.com"`.
  const m = /^(data\.)?([a-z][a-z0-9_]*)\.([A-Za-z_][\w-]*)(?:\."([^"]*)")?/.exec(reference);
  if (!m?.[2] || !m[3]) return undefined;
  if (m[2] === 'var' || m[2] === 'each' || m[2] === 'count' || m[2] === 'path' || m[2] === 'self') return undefined;
  const address = m[2] === 'local' ? `local.${m[3]}` : `${m[1] ?? ''}${m[2]}.${m[3]}`;
  return m[4] === undefined ? { address } : { address, key: m[4] };
}

/** Every node's outgoing edges; an edge to one `google_project_service` instance keeps its key. */
async function dependencyGraph(tf: TerraformDir) {
  const edges = new Map<string, { address: string; key?: string }[]>();
  const types = new Map<string, string>();
  const add = async (file: string, address: string, body: unknown) => {
    const { references } = await referencesIn(file, body);
    const out = references.flatMap((r) => addressOf(r) ?? []).filter((a) => a.address !== address);
    edges.set(address, [...(edges.get(address) ?? []), ...out]);
  };
  for (const [file, body] of tf.files) {
    for (const [type, name, b] of labelledBlocks(body['resource'])) {
      types.set(`${type}.${name}`, type);
      await add(file, `${type}.${name}`, b);
    }
    for (const [type, name, b] of labelledBlocks(body['data'])) {
      types.set(`data.${type}.${name}`, type);
      await add(file, `data.${type}.${name}`, b);
    }
    for (const l of bodies(body['locals']))
      for (const [name, value] of Object.entries(l)) await add(file, `local.${name}`, value);
  }
  return { edges, types };
}

/** The APIs a `google_project_service` resource enables, from its literal `for_each` or `service`. */
function enabledBy(tf: TerraformDir, address: string): Set<string> {
  const body = tf.resources.get(address) ?? {};
  const literal = JSON.stringify([body['for_each'], body['service']]);
  return new Set([...literal.matchAll(/\\?"([a-z0-9-]+\.googleapis\.com)\\?"/g)].map((m) => m[1] ?? ''));
}

/**
 * The resources and data sources that would call an API before it is enabled.
 *
 * @returns messages like `google_pubsub_topic.t: needs pubsub.googleapis.com but does not depend on google_project_service that enables it`
 */
export async function apiOrderProblems(tf: TerraformDir): Promise<string[]> {
  const { edges, types } = await dependencyGraph(tf);
  const problems: string[] = [];
  // The APIs each node is ordered after, reached through any chain of edges.
  const reached = (start: string): Set<string> => {
    const apis = new Set<string>();
    const seen = new Set<string>([start]);
    const queue = [start];
    while (queue.length > 0) {
      for (const edge of edges.get(queue.shift() ?? '') ?? []) {
        if (edge.address.startsWith(`${SERVICE}.`)) {
          for (const api of enabledBy(tf, edge.address)) if (edge.key === undefined || edge.key === api) apis.add(api);
        }
        if (!seen.has(edge.address)) {
          seen.add(edge.address);
          queue.push(edge.address);
        }
      }
    }
    return apis;
  };
  for (const [address, type] of types) {
    const api = apiOf(type);
    if (api === undefined)
      problems.push(`${address}: ${type} is not mapped to the API it calls (api-graph.ts API_OF_TYPE)`);
    else if (api !== null && !reached(address).has(api)) {
      problems.push(`${address}: needs ${api} but does not depend on the google_project_service that enables it`);
    }
  }
  return problems;
}
