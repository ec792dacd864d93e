/**
 * A wire-level fake of the few read-only Google REST methods `egress doctor` calls besides
 * Compute, on one loopback HTTP server (point every base URL at `fake.url`; over http doctor sends
 * no credentials). Each route follows its public reference:
 * - Service Usage `services.batchGet`, `GET /v1/projects/{p}/services:batchGet?names=…` →
 *   `{services: [{name, state: ENABLED|DISABLED}]}`
 *   (https://cloud.google.com/service-usage/docs/reference/rest/v1/services/batchGet; at most 30 names).
 * - Organization Policy v2 `projects.policies.getEffectivePolicy`,
 *   `GET /v2/projects/{p}/policies/{constraint}:getEffectivePolicy` → a Policy whose `spec.rules[]`
 *   hold `enforce` (boolean constraints) or `allowAll` / `denyAll` / `values` (list constraints)
 *   (https://cloud.google.com/resource-manager/docs/reference/orgpolicy/rest/v2/projects.policies/getEffectivePolicy).
 *   A constraint set nowhere answers a Policy without rules.
 * - Pub/Sub `projects.subscriptions.get`, `GET /v1/projects/{p}/subscriptions/{s}` → the
 *   Subscription, `404 NOT_FOUND` "Resource not found"
 *   (https://cloud.google.com/pubsub/docs/reference/rest/v1/projects.subscriptions/get).
 * - IAM `projects.serviceAccounts.keys.list`,
 *   `GET /v1/projects/{p}/serviceAccounts/{email}/keys?keyTypes=USER_MANAGED` → `{keys: [...]}`,
 *   `404` for an account that does not exist
 *   (https://cloud.google.com/iam/docs/reference/rest/v1/projects.serviceAccounts.keys/list), and
 *   `projects.locations.workloadIdentityPools.list`, `GET /v1/projects/{p}/locations/global/workloadIdentityPools`
 *   → `{workloadIdentityPools: [...]}`
 *   (https://cloud.google.com/iam/docs/reference/rest/v1/projects.locations.workloadIdentityPools/list).
 * Errors use the google.rpc.Status JSON body (`{error: {code, message, status}}`).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One org-policy rule as Policy.spec.rules[] carries it. */
export type PolicyRule =
  | { enforce: boolean }
  | { allowAll: true }
  | { denyAll: true }
  | { values: { allowedValues?: string[]; deniedValues?: string[] } };

/** The project the fake answers about; tests change it between calls. */
export interface FakeProjectState {
  enabledServices: Set<string>;
  /** Constraint name without `constraints/` → its effective rules. */
  policies: Map<string, PolicyRule[]>;
  subscriptions: Set<string>;
  /** Service account email → how many user-managed keys it has. */
  serviceAccountKeys: Map<string, number>;
  workloadIdentityPools: string[];
}

export interface FakeGoogleApis {
  url: string;
  state: FakeProjectState;
  /** `METHOD path` of every request served. */
  requests: string[];
  close(): Promise<void>;
}

function send(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
}

const fail = (code: number, status: string, message: string) => ({ code, body: { error: { code, message, status } } });

function answer(state: FakeProjectState, req: IncomingMessage): { code: number; body: unknown } {
  const url = new URL(req.url ?? '/', 'http://fake');
  const path = decodeURIComponent(url.pathname);
  let m = /^\/v1\/projects\/([^/]+)\/services:batchGet$/.exec(path);
  if (m) {
    const names = url.searchParams.getAll('names');
    if (names.length > 30) return fail(400, 'INVALID_ARGUMENT', 'at most 30 names');
    const services = names.map((name) => ({
      name,
      state: state.enabledServices.has(name.split('/').pop() ?? '') ? 'ENABLED' : 'DISABLED',
    }));
    return { code: 200, body: { services } };
  }
  m = /^\/v2\/projects\/([^/]+)\/policies\/([^/:]+):getEffectivePolicy$/.exec(path);
  if (m) {
    const rules = state.policies.get(m[2] ?? '');
    return { code: 200, body: { name: `projects/${m[1]}/policies/${m[2]}`, spec: rules ? { rules } : {} } };
  }
  m = /^\/v1\/projects\/([^/]+)\/subscriptions\/([^/]+)$/.exec(path);
  if (m) {
    if (!state.subscriptions.has(m[2] ?? '')) return fail(404, 'NOT_FOUND', 'Resource not found');
    return { code: 200, body: { name: `projects/${m[1]}/subscriptions/${m[2]}` } };
  }
  m = /^\/v1\/projects\/([^/]+)\/serviceAccounts\/([^/]+)\/keys$/.exec(path);
  if (m) {
    const n = state.serviceAccountKeys.get(m[2] ?? '');
    if (n === undefined) return fail(404, 'NOT_FOUND', `Unknown service account ${m[2]}`);
    const keys = Array.from({ length: n }, (_, i) => ({
      name: `projects/${m?.[1]}/serviceAccounts/${m?.[2]}/keys/k${i}`,
      keyType: 'USER_MANAGED',
    }));
    return { code: 200, body: { keys } };
  }
  m = /^\/v1\/projects\/([^/]+)\/locations\/global\/workloadIdentityPools$/.exec(path);
  if (m) {
    const pools = state.workloadIdentityPools.map((p) => ({
      name: `projects/${m?.[1]}/locations/global/workloadIdentityPools/${p}`,
      state: 'ACTIVE',
    }));
    return { code: 200, body: { workloadIdentityPools: pools } };
  }
  return fail(404, 'NOT_FOUND', `fake: no route ${req.method} ${path}`);
}

/** Starts the fake on a free loopback port with `state`. */
export async function startFakeGoogleApis(state: FakeProjectState): Promise<FakeGoogleApis> {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const { code, body } = req.method === 'GET' ? answer(state, req) : fail(405, 'UNIMPLEMENTED', 'GET only');
    send(res, code, body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    requests,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
