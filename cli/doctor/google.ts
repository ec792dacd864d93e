/**
 * The project as doctor reads it: Compute through `@google-cloud/compute` (REST mode), and Service
 * Usage, Organization Policy v2, Pub/Sub and IAM through their REST APIs with google-auth-library's
 * authorized client (five GET methods do not warrant four more gax clients and their protos).
 * Every base URL can point elsewhere (a fake); over plain http no credentials are sent.
 */
import { GoogleAuth, PassThroughClient, type AuthClient } from 'google-auth-library';
import { z } from 'zod';

/** Where each API is; tests point them all at loopback fakes. */
export interface Endpoints {
  /** Compute: host, port and protocol as `@google-cloud/compute` takes them. */
  compute: { apiEndpoint: string; port?: number | undefined; protocol: 'https' | 'http' };
  serviceUsage: string;
  orgPolicy: string;
  pubsub: string;
  iam: string;
}

export const GOOGLE_ENDPOINTS: Endpoints = {
  compute: { apiEndpoint: 'compute.googleapis.com', protocol: 'https' },
  serviceUsage: 'https://serviceusage.googleapis.com',
  orgPolicy: 'https://orgpolicy.googleapis.com',
  pubsub: 'https://pubsub.googleapis.com',
  iam: 'https://iam.googleapis.com',
};

/** An organisation policy rule as Policy.spec.rules[] carries it (the fields doctor reads). */
const ruleSchema = z.object({
  enforce: z.boolean().optional(),
  allowAll: z.boolean().optional(),
  denyAll: z.boolean().optional(),
  values: z
    .object({ allowedValues: z.array(z.string()).optional(), deniedValues: z.array(z.string()).optional() })
    .optional(),
});
export type PolicyRule = z.infer<typeof ruleSchema>;

const firewallSchema = z.object({
  name: z.string(),
  network: z.string(),
  direction: z.string().nullish(),
  disabled: z.boolean().nullish(),
  sourceRanges: z.array(z.string()).nullish(),
  targetTags: z.array(z.string()).nullish(),
  allowed: z.array(z.object({ IPProtocol: z.string().nullish(), ports: z.array(z.string()).nullish() })).nullish(),
});
export type Firewall = z.infer<typeof firewallSchema>;

/** What doctor asks of a project. Each method throws on an error it cannot read as an answer. */
export interface ProjectReader {
  /** service name → enabled */
  services(project: string, names: readonly string[]): Promise<Map<string, boolean>>;
  effectivePolicy(project: string, constraint: string): Promise<PolicyRule[]>;
  networkExists(project: string, network: string): Promise<boolean>;
  firewalls(project: string): Promise<Firewall[]>;
  /** metric → limit and usage */
  regionQuotas(project: string, region: string): Promise<Map<string, { limit: number; usage: number }>>;
  guestCpus(project: string, zone: string, machineType: string): Promise<number>;
  subscriptionExists(project: string, subscription: string): Promise<boolean>;
  /** User-managed keys of a service account; undefined when the account does not exist. */
  serviceAccountKeys(project: string, email: string): Promise<number | undefined>;
  workloadIdentityPools(project: string): Promise<number>;
}

type Get = (url: string) => Promise<{ status: number; data: unknown }>;

async function restGetter(endpoints: Endpoints): Promise<Get> {
  const rest = [endpoints.serviceUsage, endpoints.orgPolicy, endpoints.pubsub, endpoints.iam];
  const plain = rest.every((url) => url.startsWith('http:'));
  if (plain)
    return async (url) => {
      const res = await fetch(url);
      return { status: res.status, data: await res.json() };
    };
  const client: AuthClient = await new GoogleAuth({
    scopes: ['https://www.googleapis.com/auth/cloud-platform'],
  }).getClient();
  return async (url) => {
    const res = await client.request<unknown>({ url, validateStatus: () => true });
    return { status: res.status, data: res.data };
  };
}

function ok(what: string, res: { status: number; data: unknown }): unknown {
  if (res.status >= 200 && res.status < 300) return res.data;
  const message = z.object({ error: z.object({ message: z.string() }) }).safeParse(res.data);
  throw new Error(`${what}: HTTP ${res.status}${message.success ? ` ${message.data.error.message}` : ''}`);
}

const notFound = (err: unknown) =>
  typeof err === 'object' && err !== null && 'code' in err && (err.code === 404 || err.code === 5);

/**
 * @param endpoints - where the APIs are (default: Google's)
 * @returns a reader with Application Default Credentials (none against http fakes)
 */
export async function createGoogleReader(endpoints: Endpoints = GOOGLE_ENDPOINTS): Promise<ProjectReader> {
  const get = await restGetter(endpoints);
  const sdk = await import('@google-cloud/compute');
  const { compute } = endpoints;
  const base = {
    fallback: true,
    apiEndpoint: compute.apiEndpoint,
    protocol: compute.protocol,
    ...(compute.port !== undefined && { port: compute.port }),
    // No credentials over plain http (a fake). gax pins another google-auth-library copy whose
    // AuthClient type TypeScript tells apart from ours; gax only calls getRequestHeaders and fetch.
    ...(compute.protocol === 'http' && { authClient: new PassThroughClient() as never }),
  };
  const networks = new sdk.NetworksClient(base);
  const firewalls = new sdk.FirewallsClient(base);
  const regions = new sdk.RegionsClient(base);
  const machineTypes = new sdk.MachineTypesClient(base);

  return {
    async services(project, names) {
      const out = new Map<string, boolean>();
      for (let i = 0; i < names.length; i += 30) {
        const query = names
          .slice(i, i + 30)
          .map((n) => `names=${encodeURIComponent(`projects/${project}/services/${n}`)}`)
          .join('&');
        const url = `${endpoints.serviceUsage}/v1/projects/${project}/services:batchGet?${query}`;
        const body = z
          .object({ services: z.array(z.object({ name: z.string(), state: z.string() })).default([]) })
          .parse(ok('serviceusage services.batchGet', await get(url)));
        for (const s of body.services) out.set(s.name.split('/').pop() ?? '', s.state === 'ENABLED');
      }
      return out;
    },
    async effectivePolicy(project, constraint) {
      const url = `${endpoints.orgPolicy}/v2/projects/${project}/policies/${constraint}:getEffectivePolicy`;
      const body = z
        .object({ spec: z.object({ rules: z.array(ruleSchema).default([]) }).default({ rules: [] }) })
        .parse(ok(`orgpolicy getEffectivePolicy ${constraint}`, await get(url)));
      return body.spec.rules;
    },
    async networkExists(project, network) {
      try {
        await networks.get({ project, network });
        return true;
      } catch (err) {
        if (notFound(err)) return false;
        throw err;
      }
    },
    async firewalls(project) {
      const [items] = await firewalls.list({ project }, { autoPaginate: true });
      return items.map((f) => firewallSchema.parse(f));
    },
    async regionQuotas(project, region) {
      const [answer] = await regions.get({ project, region });
      const quotas = z
        .array(z.object({ metric: z.string(), limit: z.number(), usage: z.number() }))
        .parse(answer.quotas ?? []);
      return new Map(quotas.map((q) => [q.metric, { limit: q.limit, usage: q.usage }]));
    },
    async guestCpus(project, zone, machineType) {
      const [answer] = await machineTypes.get({ project, zone, machineType });
      return z.number().parse(answer.guestCpus);
    },
    async subscriptionExists(project, subscription) {
      const res = await get(`${endpoints.pubsub}/v1/projects/${project}/subscriptions/${subscription}`);
      if (res.status === 404) return false;
      ok('pubsub subscriptions.get', res);
      return true;
    },
    async serviceAccountKeys(project, email) {
      const res = await get(
        `${endpoints.iam}/v1/projects/${project}/serviceAccounts/${email}/keys?keyTypes=USER_MANAGED`,
      );
      if (res.status === 404) return undefined;
      return z.object({ keys: z.array(z.unknown()).default([]) }).parse(ok('iam keys.list', res)).keys.length;
    },
    async workloadIdentityPools(project) {
      const res = await get(`${endpoints.iam}/v1/projects/${project}/locations/global/workloadIdentityPools`);
      const body = z
        .object({ workloadIdentityPools: z.array(z.unknown()).default([]) })
        .parse(ok('iam workloadIdentityPools.list', res));
      return body.workloadIdentityPools.length;
    },
  };
}
