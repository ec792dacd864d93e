/**
 * A wire-level fake Kubernetes API server for tests (see README.md): the real `@kubernetes/client-node`
 * talks to it over HTTP, and its Pods run Debian's tinyproxy with the product's configuration on loopback IPs of their own.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NamespaceRules } from './admission.js';
import { Kubelet } from './kubelet.js';
import { loseNode, NOT_READY, UNREACHABLE } from './node-lifecycle.js';
import { applyRbacObjects } from './rbac.js';
import type { FakeNode } from './scheduling.js';
import {
  deletePod,
  handle,
  type Fault,
  type RequestRecord,
  type Resource,
  type ServerState,
  type Verb,
} from './server.js';
import { ObjectStore, type StoredPod, type StoredSecret } from './store.js';

export type { Fault, FakeNode, NamespaceRules, RequestRecord, StoredPod };

export interface FakeKubeOptions {
  /** Namespaces that exist (default `['default']`). */
  namespaces?: string[];
  /** Nodes (default one, `fake-node-1`, no labels or taints); IPs are assigned from `ipPrefix`. */
  nodes?: { name: string; labels?: Record<string, string>; taints?: FakeNode['taints'] }[];
  /** First two octets of every address this fake hands out, e.g. `127.42` (default: a random block). */
  ipPrefix?: string;
  timing?: Partial<{ scheduleMs: number; startMs: number; probeMs: number; terminateMs: number }>;
  /** Pod count quota per namespace. */
  podQuota?: Record<string, number>;
  /** Pod Security level, LimitRange and lifecycle per namespace. */
  namespaceRules?: Record<string, NamespaceRules>;
}

export interface FakeKube {
  /** `http://127.0.0.1:PORT`. */
  url: string;
  /** A bearer token of the user `system:serviceaccount:egress:functions`. */
  token: string;
  user: string;
  /** Provider options that reach this fake (`server` and `token`). */
  /**
   * How a provider reaches this fake, with `allowUnpinnedImage`: the fake pulls no image, and its
   * tests run the default (tag) image as a development cluster would.
   */
  access(): { server: string; token: string; allowUnpinnedImage: true };
  /** Switches read by the kubelet: Pods never finish terminating; images fail to pull. */
  faults: { stuckTerminating: boolean; imagePullFails: boolean };
  /** Adds a fault; returns its removal. */
  inject(fault: Fault): () => void;
  /** While down, every connection is reset. */
  setDown(down: boolean): void;
  /** Removes an RBAC permission of the fake's user (namespace `*`: everywhere). */
  deny(verb: Verb, resource: Resource, namespace?: string): void;
  /**
   * A bearer token for another user, authorised only by the Roles and RoleBindings applied with
   * `applyRbac` (rbac.ts), as an API server maps a token to a user name (GKE: the account's email).
   */
  addUser(name: string): string;
  /** Applies Role and RoleBinding objects in a namespace, as `kubectl apply -n namespace -f` would. */
  applyRbac(namespace: string, objects: unknown[]): void;
  allowAll(): void;
  setPodQuota(namespace: string, pods: number | undefined): void;
  /** Replaces what a namespace enforces (Pod Security level, LimitRange, terminating). */
  setNamespaceRules(namespace: string, rules: NamespaceRules | undefined): void;
  pod(namespace: string, name: string): StoredPod | undefined;
  pods(namespace?: string): StoredPod[];
  secret(namespace: string, name: string): StoredSecret | undefined;
  secrets(namespace?: string): StoredSecret[];
  /**
   * A node joins the cluster (the cluster autoscaler or GKE Autopilot answering Unschedulable
   * Pods); the scheduler retries pending Pods every 500 ms, so they land on it.
   */
  addNode(node: { name: string; labels?: Record<string, string>; taints?: FakeNode['taints'] }): void;
  /** Someone else deletes the Pod (like `kubectl delete pod`): graceful, as through the API. */
  deletePodOutOfBand(namespace: string, name: string): void;
  /**
   * The node becomes unreachable, or with `notReady` reports NotReady (node-lifecycle.ts): its
   * Pods go Ready=False and, unless `evict` is false (a fully disrupted zone), are evicted as
   * their NoExecute tolerations of the node's taint say.
   */
  loseNode(name: string, options?: { evict?: boolean; notReady?: boolean }): void;
  /** The node evicts the Pod: phase Failed, its process killed. */
  evict(namespace: string, name: string): void;
  /** The proxy process crashes; restartPolicy Always restarts it. */
  crash(namespace: string, name: string): boolean;
  /** Every request served so far. */
  requests: RequestRecord[];
  close(): Promise<void>;
}

/** Starts the fake on a free port of 127.0.0.1. */
export async function startFakeKube(options: FakeKubeOptions = {}): Promise<FakeKube> {
  const block = await claimIpBlock(options.ipPrefix);
  const ipPrefix = block.prefix;
  type NodeSpec = NonNullable<FakeKubeOptions['nodes']>[number];
  const toNode = (n: NodeSpec, i: number): FakeNode => ({
    name: n.name,
    ip: `${ipPrefix}.255.${i + 1}`,
    labels: { 'kubernetes.io/hostname': n.name, ...(n.labels ?? {}) },
    taints: n.taints ?? [],
  });
  const nodes: FakeNode[] = (options.nodes ?? [{ name: 'fake-node-1' }]).map(toNode);
  const store = new ObjectStore(options.namespaces ?? ['default']);
  const faults = { stuckTerminating: false, imagePullFails: false };
  const id = randomBytes(4).toString('hex');
  const dir = mkdtempSync(join(tmpdir(), 'egress-kube-fake-'));
  const kubelet = new Kubelet({
    store,
    nodes,
    ipPrefix,
    timing: { scheduleMs: 50, startMs: 100, probeMs: 150, terminateMs: 200, ...(options.timing ?? {}) },
    dir,
    faults,
    markers: [`--egress-fake-kube=${id}`],
  });
  const token = randomBytes(16).toString('hex');
  const user = 'system:serviceaccount:egress:functions';
  const state: ServerState = {
    store,
    kubelet,
    tokens: new Map([[token, user]]),
    denied: new Set(),
    rbacUsers: new Set(),
    rbac: new Map(),
    podQuota: new Map(Object.entries(options.podQuota ?? {})),
    namespaceRules: new Map(Object.entries(options.namespaceRules ?? {})),
    faults: [],
    log: [],
  };

  let down = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((req, res) => {
    if (down) return void req.socket.destroy();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void handle(state, req, Buffer.concat(chunks).toString('utf8')).then(({ code, body }) => {
        if (down) return void req.socket.destroy();
        res.writeHead(code, { 'content-type': 'application/json' });
        res.end(JSON.stringify(body));
      });
    });
  });
  server.on('connection', (s: Socket) => {
    if (down) return void s.destroy();
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const url = `http://127.0.0.1:${port}`;
  const pod = (ns: string, name: string) => store.findPod(ns, name);
  const lifecycleTimers = new Set<NodeJS.Timeout>();

  return {
    url,
    token,
    user,
    access: () => ({ server: url, token, allowUnpinnedImage: true }),
    faults,
    inject(fault) {
      state.faults.push(fault);
      return () => {
        const i = state.faults.indexOf(fault);
        if (i >= 0) state.faults.splice(i, 1);
      };
    },
    setDown(value) {
      down = value;
      if (value) for (const s of sockets) s.destroy();
    },
    deny: (verb, resource, namespace = '*') => state.denied.add(`${user}|${verb}|${resource}|${namespace}`),
    allowAll: () => state.denied.clear(),
    addUser(name) {
      const userToken = randomBytes(16).toString('hex');
      state.tokens.set(userToken, name);
      state.rbacUsers.add(name);
      return userToken;
    },
    applyRbac: (namespace, objects) => applyRbacObjects(state.rbac, namespace, objects),
    setPodQuota(namespace, pods) {
      if (pods === undefined) state.podQuota.delete(namespace);
      else state.podQuota.set(namespace, pods);
    },
    setNamespaceRules(namespace, rules) {
      if (rules === undefined) state.namespaceRules.delete(namespace);
      else state.namespaceRules.set(namespace, rules);
    },
    addNode: (n) => void nodes.push(toNode(n, nodes.length)),
    pod,
    pods: (ns) => store.listPods(ns),
    secret: (ns, name) => store.findSecret(ns, name),
    secrets: (ns) => store.listSecrets(ns),
    deletePodOutOfBand(ns, name) {
      const p = pod(ns, name);
      if (p) deletePod(state, p);
    },
    loseNode(name, o = {}) {
      const timers = lifecycleTimers;
      const deps = {
        nodes,
        pods: () => store.listPods(),
        lose: (p: StoredPod) => kubelet.lose(p),
        deletePod: (p: StoredPod) => void deletePod(state, p),
        later: (ms: number, fn: () => void) => void timers.add(setTimeout(fn, ms)),
      };
      loseNode(deps, name, o.evict ?? true, o.notReady ? NOT_READY : UNREACHABLE);
    },
    evict(ns, name) {
      const p = pod(ns, name);
      if (p) kubelet.evict(p);
    },
    crash: (ns, name) => {
      const p = pod(ns, name);
      return p ? kubelet.crash(p) : false;
    },
    requests: state.log,
    async close() {
      for (const t of lifecycleTimers) clearTimeout(t);
      await kubelet.close();
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      rmSync(dir, { recursive: true, force: true });
      block.release();
    },
  };
}

/**
 * Claims a block `127.B.*.*` for this fake's Pod and node IPs, across processes (test files run in
 * parallel): holding a listener on `127.B.255.254` is the lock, released on close.
 */
async function claimIpBlock(wanted?: string): Promise<{ prefix: string; release(): void }> {
  const start = 10 + Math.floor(Math.random() * 240);
  const candidates = wanted ? [wanted] : Array.from({ length: 240 }, (_, i) => `127.${10 + ((start - 10 + i) % 240)}`);
  for (const prefix of candidates) {
    const lock = createTcpServer();
    const ok = await new Promise<boolean>((resolve) => {
      lock.once('error', () => resolve(false));
      lock.listen(47_999, `${prefix}.255.254`, () => resolve(true));
    });
    if (ok) return { prefix, release: () => lock.close() };
  }
  throw new Error(`no free 127.B.0.0/16 block for a fake Kubernetes API${wanted ? ` (${wanted} is taken)` : ''}`);
}
