/**
 * A wire-level fake of the Compute Engine v1 REST API (the methods the gcp provider calls), for
 * `@google-cloud/compute` in REST mode: `startFakeGce()` and point the provider's `apiEndpoint`,
 * `port` and `protocol: http` at it. See README.md for the behaviour and the reference it follows.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { ComputeError, faultError, type Fault, type Method } from './errors.js';
import { GuestRunner } from './guest.js';
import { DEFAULT_NETWORKS, type FakeNetwork } from './networks.js';
import type { FakeFirewall, FakeQuotas } from './project.js';
import { route, COMPUTE_ROUTES, type RouteContext } from './routes.js';
import type { Timing, Vm } from './resources.js';
import { World } from './world.js';

export type { Fault, Method } from './errors.js';
export type { FakeNetwork } from './networks.js';
export type { FakeFirewall, FakeQuotas } from './project.js';
export { parseUserData } from './guest.js';

export interface FakeGceOptions {
  timing?: Partial<Timing>;
  /**
   * How long `zoneOperations.wait` holds a request before answering "not DONE yet" (Compute: 2 min).
   * 0 models an overloaded server: the method "might return after zero seconds"
   * (https://cloud.google.com/compute/docs/reference/rest/v1/zoneOperations/wait).
   */
  waitMaxMs?: number;
  /** Items per aggregated-list page (default and Compute's maximum: 500). */
  pageSize?: number;
  /**
   * The VPC networks of every project (default: the auto-mode `default` network). A list without
   * `default` is a project without a default network, as organisations often create them.
   */
  networks?: FakeNetwork[];
  /** Firewall rules of every project (default: none). */
  firewalls?: FakeFirewall[];
  /** Regional quota limits (default: room for anything). */
  quotas?: FakeQuotas;
}

export interface FakeGce {
  port: number;
  /** The provider options that point at this fake. */
  endpoint: { apiEndpoint: string; port: number; protocol: 'http' };
  /** Every request served, in order. */
  requests: { method: Method | 'unknown'; path: string }[];
  /** How many times `method` was called. */
  count(method: Method): number;
  /** Makes the next matching call(s) fail or misbehave. */
  inject(fault: Fault): void;
  clearFaults(): void;
  /** Refuses every connection (a Compute API that cannot be reached). */
  setDown(down: boolean): void;
  /** Zones whose scope aggregated lists report as UNREACHABLE. */
  unreachableZones: Set<string>;
  /** Organisation-policy constraints set to deny all (`compute.vmExternalIpAccess`). */
  deniedConstraints: Set<string>;
  /** The VMs now known, in every project. */
  instances(): Vm[];
  find(name: string): Vm | undefined;
  /** Stops a VM behind the provider's back (it ends TERMINATED). */
  stopInstance(name: string): void;
  /** Hard-resets a VM behind the provider's back (it stays RUNNING; its guest boots again). */
  resetInstance(name: string): void;
  /** The metadata server loses the next `n` guest-attribute PUTs (the guest's retries see it). */
  loseGuestPuts(n: number): void;
  /** The `--gce-fake=<id>` marker on every guest proxy process of this fake. */
  guestMarker: string;
  close(): Promise<void>;
}

const DEFAULT_TIMING: Timing = { provisioningMs: 150, stagingMs: 200, stoppingMs: 150, deletingMs: 200 };

function readBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('error', reject);
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      try {
        resolve(text ? JSON.parse(text) : undefined);
      } catch {
        reject(new ComputeError(400, 'parseError', 'This API does not support parsing form-encoded input.'));
      }
    });
  });
}

function send(res: ServerResponse, status: number, body?: unknown): void {
  if (res.writableEnded || res.destroyed) return;
  if (body === undefined) {
    res.writeHead(status).end();
    return;
  }
  res.writeHead(status, { 'content-type': 'application/json; charset=UTF-8' }).end(JSON.stringify(body));
}

/** Starts the fake on a free loopback port. */
export async function startFakeGce(options: FakeGceOptions = {}): Promise<FakeGce> {
  const marker = randomBytes(6).toString('hex');
  const guests = new GuestRunner(marker);
  const world = new World({ ...DEFAULT_TIMING, ...options.timing }, guests);
  const faults: Fault[] = [];
  const requests: FakeGce['requests'] = [];
  const unreachableZones = new Set<string>();
  const deniedConstraints = new Set<string>();
  let down = false;

  const takeFault = (method: Method, name: string | undefined): Fault | undefined => {
    const i = faults.findIndex((f) => f.method === method && (!f.instance || f.instance === name));
    const fault = faults[i];
    if (!fault) return undefined;
    const left = (fault.times ?? 1) - 1;
    if (left <= 0) faults.splice(i, 1);
    else fault.times = left;
    return fault;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://fake');
    const found = COMPUTE_ROUTES.map((r) => ({ r, m: req.method === r[1] ? r[2].exec(url.pathname) : null })).find(
      (x) => x.m,
    );
    requests.push({ method: found?.r[0] ?? 'unknown', path: `${req.method} ${url.pathname}` });
    if (!found?.m) throw new ComputeError(404, 'notFound', `No such method: ${req.method} ${url.pathname}`);
    const [method, , , names] = found.r;
    const params = Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(found.m?.[i + 1] ?? '')]));
    const body = req.method === 'POST' ? await readBody(req) : undefined;
    const insertName: unknown =
      method === 'instances.insert' && body && typeof body === 'object' ? Reflect.get(body, 'name') : undefined;
    const fault = takeFault(method, params['name'] ?? (typeof insertName === 'string' ? insertName : undefined));
    const ctx: RouteContext = {
      world,
      waitMaxMs: options.waitMaxMs ?? 120_000,
      pageSize: Math.min(options.pageSize ?? 500, 500),
      unreachableZones,
      deniedConstraints,
      networks: options.networks ?? DEFAULT_NETWORKS,
      firewalls: options.firewalls ?? [],
      quotas: options.quotas ?? {},
    };
    if (fault?.kind === 'slow') await sleep(fault.delayMs);
    if (fault?.kind === 'drop') return void req.socket.destroy();
    if (fault?.kind === 'operationError') ctx.insertFailure = fault;
    const injected = fault && faultError(fault, url.pathname.replace('/compute/v1/', ''), permissionOf(method));
    if (injected) throw injected;
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    const answer = await route({ method, params, query: url.searchParams, body, signal: aborted.signal }, ctx);
    send(res, answer.status, answer.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof ComputeError) return send(res, err.status, err.body());
      send(res, 500, new ComputeError(500, 'internalError', `fake: ${String(err)}`).body());
    });
  });
  server.on('connection', (socket) => {
    if (down) socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  return {
    port,
    endpoint: { apiEndpoint: '127.0.0.1', port, protocol: 'http' },
    requests,
    count: (method) => requests.filter((r) => r.method === method).length,
    inject: (fault) => faults.push({ ...fault }),
    clearFaults: () => (faults.length = 0),
    setDown: (value) => {
      down = value;
      if (value) server.closeAllConnections();
    },
    unreachableZones,
    deniedConstraints,
    instances: () => [...world.vms.values()],
    find: (name) => [...world.vms.values()].find((vm) => vm.name === name),
    stopInstance: (name) => world.stop(vmNamed(world, name)),
    resetInstance: (name) => world.reset(vmNamed(world, name)),
    loseGuestPuts: (n) => (world.lostPuts = n),
    guestMarker: marker,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await world.close();
      await guests.close();
    },
  };
}

function vmNamed(world: World, name: string): Vm {
  const vm = [...world.vms.values()].find((v) => v.name === name);
  if (!vm) throw new Error(`fake: no instance ${name}`);
  return vm;
}

/** The IAM permission a method needs, for the 403 body of an injected `forbidden`. */
function permissionOf(method: Method): string {
  const [resource = '', verb = ''] = method.split('.');
  const noun = resource === 'zoneOperations' || resource === 'globalOperations' ? 'globalOperations' : resource;
  const action = verb === 'insert' ? 'create' : verb === 'aggregatedList' ? 'list' : verb === 'wait' ? 'get' : verb;
  return `compute.${noun}.${action === 'getFromFamily' ? 'getFromFamily' : action}`;
}
