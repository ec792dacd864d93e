/** The fake's REST routes: exactly the Compute v1 methods the gcp provider and egress doctor call, with Compute's validations. */
import { ALL_ZONES, MACHINE_TYPES, resolveImage } from './catalog.js';
import { ComputeError, invalidField, notFound, policyViolated, type Method } from './errors.js';
import { matches, parseFilter } from './filter.js';
import { insertBodySchema } from './insert-body.js';
import { accessConfigsOf, checkAccessConfigs, checkScheduling, checkServiceAccounts } from './insert-rules.js';
import { resolveNic, type FakeNetwork } from './networks.js';
import {
  guestAttributes,
  imageJson,
  instanceJson,
  machineTypeJson,
  operationJson,
  scopeWarning,
  zoneJson,
} from './render.js';
import { firewallsJson, networkJson, regionJson, type FakeFirewall, type FakeQuotas } from './project.js';
import type { Op, Vm } from './resources.js';
import { World } from './world.js';

/** A parsed request: the route's method and path parameters, the query, the body. */
export interface Call {
  method: Method;
  params: Record<string, string>;
  query: URLSearchParams;
  body: unknown;
  /** Aborted when the client goes away (a `wait` stops waiting). */
  signal: AbortSignal;
}

/** What a route answers: a status and a JSON body (undefined for 204). */
export type ComputeAnswer = { status: number; body?: unknown };

export interface RouteContext {
  world: World;
  waitMaxMs: number;
  /** Items per aggregated-list page when the client asks for more (Compute: at most 500). */
  pageSize: number;
  unreachableZones: Set<string>;
  /** The VPC networks of the fake's projects (an insert's interface must name one of them). */
  networks: FakeNetwork[];
  /** The projects' firewall rules (firewalls.list) and regional quota limits (regions.get). */
  firewalls: FakeFirewall[];
  quotas: FakeQuotas;
  /** Organisation-policy constraints enforced as "deny all" (`compute.vmExternalIpAccess`). */
  deniedConstraints: Set<string>;
  /** A pending `operationError` fault for this insert, if one was injected. */
  insertFailure?: { code: string; location?: string | undefined; afterMs?: number | undefined } | undefined;
}

const P = '/compute/v1/projects/([^/]+)';
const N = '([^/]+)';
/** Method, verb, path pattern and parameter names, in the order they are matched. */
export const COMPUTE_ROUTES: [Method, string, RegExp, string[]][] = [
  ['instances.aggregatedList', 'GET', new RegExp(`^${P}/aggregated/instances$`), ['project']],
  ['globalOperations.aggregatedList', 'GET', new RegExp(`^${P}/aggregated/operations$`), ['project']],
  ['instances.insert', 'POST', new RegExp(`^${P}/zones/${N}/instances$`), ['project', 'zone']],
  [
    'instances.getGuestAttributes',
    'GET',
    new RegExp(`^${P}/zones/${N}/instances/${N}/getGuestAttributes$`),
    ['project', 'zone', 'name'],
  ],
  ['instances.get', 'GET', new RegExp(`^${P}/zones/${N}/instances/${N}$`), ['project', 'zone', 'name']],
  ['instances.delete', 'DELETE', new RegExp(`^${P}/zones/${N}/instances/${N}$`), ['project', 'zone', 'name']],
  ['zoneOperations.wait', 'POST', new RegExp(`^${P}/zones/${N}/operations/${N}/wait$`), ['project', 'zone', 'name']],
  ['zoneOperations.get', 'GET', new RegExp(`^${P}/zones/${N}/operations/${N}$`), ['project', 'zone', 'name']],
  ['zoneOperations.delete', 'DELETE', new RegExp(`^${P}/zones/${N}/operations/${N}$`), ['project', 'zone', 'name']],
  ['machineTypes.get', 'GET', new RegExp(`^${P}/zones/${N}/machineTypes/${N}$`), ['project', 'zone', 'name']],
  ['zones.get', 'GET', new RegExp(`^${P}/zones/${N}$`), ['project', 'zone']],
  ['images.getFromFamily', 'GET', new RegExp(`^${P}/global/images/family/${N}$`), ['project', 'name']],
  ['images.get', 'GET', new RegExp(`^${P}/global/images/${N}$`), ['project', 'name']],
  ['networks.get', 'GET', new RegExp(`^${P}/global/networks/${N}$`), ['project', 'name']],
  ['firewalls.list', 'GET', new RegExp(`^${P}/global/firewalls$`), ['project']],
  ['regions.get', 'GET', new RegExp(`^${P}/regions/${N}$`), ['project', 'region']],
];

const RFC1035 = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;
const LABEL_KEY = /^[a-z][a-z0-9_-]{0,62}$/;
const LABEL_VALUE = /^[a-z0-9_-]{0,63}$/;

const zoneKnown = (zone: string) => ALL_ZONES.includes(zone);
const instancePath = (p: Record<string, string>) =>
  `projects/${p['project']}/zones/${p['zone']}/instances/${p['name']}`;
const opPath = (p: Record<string, string>) => `projects/${p['project']}/zones/${p['zone']}/operations/${p['name']}`;

function need(value: string | undefined): string {
  if (value === undefined) throw new ComputeError(400, 'required', 'Required parameter missing');
  return value;
}

/** Answers one call. Throws ComputeError for refusals (the server writes the error body). */
export async function route(call: Call, ctx: RouteContext): Promise<ComputeAnswer> {
  const { world } = ctx;
  const p = call.params;
  const project = need(p['project']);
  switch (call.method) {
    case 'instances.insert':
      return { status: 200, body: operationJson(insert(ctx, project, need(p['zone']), call)) };
    case 'instances.get': {
      const vm = world.vm(project, need(p['zone']), need(p['name']));
      if (!vm) throw notFound(instancePath(p));
      return { status: 200, body: instanceJson(vm, vm.body) };
    }
    case 'instances.getGuestAttributes': {
      const vm = world.vm(project, need(p['zone']), need(p['name']));
      if (!vm) throw notFound(instancePath(p));
      return { status: 200, body: guestAttributes(vm, call.query, instancePath(p)) };
    }
    case 'instances.delete':
      return { status: 200, body: operationJson(world.delete(project, need(p['zone']), need(p['name']))) };
    case 'instances.aggregatedList':
      return { status: 200, body: aggregated(ctx, project, call.query, 'instances') };
    case 'globalOperations.aggregatedList':
      return { status: 200, body: aggregated(ctx, project, call.query, 'operations') };
    case 'zoneOperations.get':
      return { status: 200, body: operationJson(operation(world, p)) };
    case 'zoneOperations.wait': {
      const op = operation(world, p);
      await world.waitFor(op, ctx.waitMaxMs, call.signal);
      return { status: 200, body: operationJson(op) };
    }
    case 'zoneOperations.delete':
      operation(world, p);
      world.ops.delete(World.key(project, need(p['zone']), need(p['name'])));
      return { status: 204 };
    case 'zones.get':
      if (!zoneKnown(need(p['zone']))) throw notFound(`projects/${project}/zones/${p['zone']}`);
      return { status: 200, body: zoneJson(project, need(p['zone'])) };
    case 'machineTypes.get':
      if (!zoneKnown(need(p['zone'])) || !MACHINE_TYPES[need(p['name'])])
        throw notFound(`projects/${project}/zones/${p['zone']}/machineTypes/${p['name']}`);
      return { status: 200, body: machineTypeJson(project, need(p['zone']), need(p['name'])) };
    case 'networks.get':
      return { status: 200, body: networkJson(ctx.networks, project, need(p['name'])) };
    case 'firewalls.list':
      return { status: 200, body: firewallsJson(ctx.firewalls, project) };
    case 'regions.get':
      return { status: 200, body: regionJson(ctx.quotas, world.vms.values(), project, need(p['region'])) };
    case 'images.getFromFamily':
    case 'images.get': {
      const family = call.method === 'images.getFromFamily';
      const path = `projects/${project}/global/images/${family ? 'family/' : ''}${p['name']}`;
      const image = resolveImage(path);
      if (!image) throw notFound(path);
      return { status: 200, body: imageJson(image) };
    }
  }
}

function operation(world: World, p: Record<string, string>): Op {
  const op = world.op(need(p['project']), need(p['zone']), need(p['name']));
  if (!op) throw notFound(opPath(p));
  return op;
}

/** instances.insert: Compute's synchronous checks, in the order it reports them. */
function insert(ctx: RouteContext, project: string, zone: string, call: Call): Op {
  if (!zoneKnown(zone)) throw invalidField('zone', zone, 'Unknown zone.');
  const parsed = insertBodySchema.safeParse(call.body);
  if (!parsed.success)
    throw new ComputeError(400, 'invalid', "Invalid value for field 'resource': the body is not an Instance.");
  const body = parsed.data;
  if (!RFC1035.test(body.name))
    throw invalidField('resource.name', body.name, 'Must be a match of regex (?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)');
  const mt = /(?:^|\/)zones\/([^/]+)\/machineTypes\/([^/]+)$/.exec(body.machineType ?? '');
  if (!mt || mt[1] !== zone || !MACHINE_TYPES[mt[2] ?? ''])
    throw invalidField(
      'resource.machineType',
      body.machineType ?? '',
      `Machine type with name '${mt?.[2] ?? ''}' does not exist in zone '${zone}'.`,
    );
  const source = body.disks?.find((d) => d.boot)?.initializeParams?.sourceImage;
  if (!source)
    throw new ComputeError(
      400,
      'required',
      "Required field 'resource.disks[0].initializeParams.sourceImage' not specified",
    );
  if (!resolveImage(source)) throw notFound(source.replace(/^https:\/\/[^/]+\/compute\/v1\//, ''));
  const labels = Object.entries(body.labels ?? {});
  const badLabel = labels.find(([k, v]) => !LABEL_KEY.test(k) || !LABEL_VALUE.test(v));
  if (labels.length > 64 || badLabel)
    throw invalidField('labels', badLabel?.join('=') ?? '', 'Label keys and values must conform to RFC 1035.');
  const metadataSize = (body.metadata?.items ?? []).reduce((n, i) => n + i.key.length + (i.value ?? '').length, 0);
  if (metadataSize > 512 * 1024) throw new ComputeError(400, 'invalid', 'Metadata exceeds the 512 KB limit.');
  checkScheduling(body);
  checkServiceAccounts(body);
  checkAccessConfigs(body);
  const nic = resolveNic(ctx.networks, project, zone, body.networkInterfaces?.[0]);
  // Org policies are checked after the request is valid: an external IP under a deny-all
  // vmExternalIpAccess is refused 412 conditionNotMet (never an operation error).
  if (accessConfigsOf(body).length > 0 && ctx.deniedConstraints.has('compute.vmExternalIpAccess'))
    throw policyViolated(
      'compute.vmExternalIpAccess',
      project,
      `projects/${project}/zones/${zone}/instances/${body.name}`,
    );
  return ctx.world.insert(project, zone, body, nic, call.query.get('requestId') ?? undefined, ctx.insertFailure);
}

/** An aggregated list over every zone: matching items per scope, warnings for empty and unreachable scopes. */
function aggregated(ctx: RouteContext, project: string, query: URLSearchParams, what: 'instances' | 'operations') {
  const terms = parseFilter(query.get('filter') ?? undefined);
  const max = Math.min(Number(query.get('maxResults') ?? 500) || 500, ctx.pageSize);
  const start = Number(query.get('pageToken') ?? 0) || 0;
  const reachable = (zone: string) => !ctx.unreachableZones.has(zone);
  // "returnPartialSuccess: Opt-in for partial success behavior which provides partial results in
  // case of failure" (instances/aggregatedList): without it, one unreachable zone fails the list.
  const partial = query.get('returnPartialSuccess') === 'true';
  const down = ALL_ZONES.find((z) => !reachable(z));
  if (down && !partial)
    throw new ComputeError(
      503,
      'backendError',
      `Scope zones/${down} is unreachable; retry, or set returnPartialSuccess.`,
    );
  const all: [string, Record<string, unknown>][] =
    what === 'instances'
      ? [...ctx.world.vms.values()]
          .filter((vm: Vm) => vm.project === project && reachable(vm.zone))
          .map((vm) => [vm.zone, instanceJson(vm, vm.body)])
      : [...ctx.world.ops.values()]
          .filter((op) => op.project === project && reachable(op.zone))
          .map((op) => [op.zone, operationJson(op)]);
  const matched = all.filter(([, json]) => matches(json, terms)).sort(([a], [b]) => a.localeCompare(b));
  const page = matched.slice(start, start + max);
  const items: Record<string, unknown> = {};
  for (const zone of ALL_ZONES) {
    const scope = `zones/${zone}`;
    const here = page.filter(([z]) => z === zone).map(([, json]) => json);
    items[scope] = !reachable(zone)
      ? scopeWarning(scope, 'UNREACHABLE')
      : here.length > 0
        ? { [what]: here }
        : scopeWarning(scope, 'NO_RESULTS_ON_PAGE');
  }
  const unreachables = ALL_ZONES.filter((z) => !reachable(z)).map((z) => `zones/${z}`);
  return {
    kind: what === 'instances' ? 'compute#instanceAggregatedList' : 'compute#operationAggregatedList',
    id: `projects/${project}/aggregated/${what}`,
    items,
    selfLink: `https://www.googleapis.com/compute/v1/projects/${project}/aggregated/${what}`,
    ...(start + max < matched.length ? { nextPageToken: String(start + max) } : {}),
    ...(partial && unreachables.length > 0 ? { unreachables } : {}),
  };
}
