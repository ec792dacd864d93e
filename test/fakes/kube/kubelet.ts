/**
 * The fake's scheduler and kubelet: Pods advance Pending → scheduled → Running → Ready over time,
 * run their init containers once, then a real proxy process (and its stunnel sidecar) on their own
 * loopback IP, restart them if one dies, and on graceful deletion stop them before the object
 * disappears.
 */
import { rmSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  configSource,
  emptyDirOf,
  readConfig,
  runInitContainer,
  startProxy,
  startTlsSidecar,
  tcpProbe,
  tlsSidecarSettings,
  together,
  type ProxyProcess,
} from './container.js';
import { configuredPort } from '../guest-proxy.js';
import { containerStatuses, withConditions } from './pod-status.js';
import { schedule, type FakeNode } from './scheduling.js';
import { stamp, type ObjectStore, type StoredPod } from './store.js';

export interface KubeletOptions {
  store: ObjectStore;
  nodes: FakeNode[];
  /** First two octets of Pod IPs, e.g. `127.42` (a block of 127/8 of this fake's own). */
  ipPrefix: string;
  /** Delays of each step (ms): scheduling, container start, readiness probe period, termination. */
  timing: { scheduleMs: number; startMs: number; probeMs: number; terminateMs: number };
  /** Where the Pods' tinyproxy config and log files go. */
  dir: string;
  /** Fault switches read at each step. */
  faults: { stuckTerminating: boolean; imagePullFails: boolean };
  /** argv markers of this fake's processes. */
  markers: string[];
}

interface Run {
  timers: Set<NodeJS.Timeout>;
  proxy?: ProxyProcess;
  /** The Pod's IP, and the address its process listens on (the node's with hostNetwork/hostPort). */
  podIp?: string;
  host?: string;
  restarts: number;
  /** Its init containers ran to completion (they run again only for a new Pod). */
  initialized?: boolean;
  /** Set once the Pod is terminating, evicted or gone: no more restarts. */
  stopping: boolean;
  terminating?: boolean;
  /** Its node is lost: nothing the kubelet does reaches the API any more. */
  lost?: boolean;
}

export class Kubelet {
  private readonly runs = new Map<StoredPod, Run>();
  private nextIp = 0;
  private closed = false;

  constructor(private readonly o: KubeletOptions) {}

  /** A new Pod: the scheduler looks at it after `scheduleMs`. */
  admit(pod: StoredPod): void {
    const run: Run = { timers: new Set(), restarts: 0, stopping: false };
    this.runs.set(pod, run);
    this.later(run, this.o.timing.scheduleMs, () => this.schedule(pod, run));
  }

  /** Graceful deletion (deletionTimestamp already set): SIGTERM, SIGKILL after the grace period, then remove. */
  terminate(pod: StoredPod, graceSeconds: number): void {
    const run = this.runs.get(pod);
    if (!run) return this.o.store.removePod(pod);
    // A second DELETE of a terminating Pod changes nothing here (the real API may only shorten the grace).
    // A lost node's kubelet never confirms: the Pod stays until a forced delete.
    if (run.terminating || run.lost) return;
    run.terminating = true;
    run.stopping = true;
    this.clear(run);
    const finish = () => this.later(run, this.o.timing.terminateMs, () => this.remove(pod, run));
    const proxy = run.proxy;
    if (!proxy) return void finish();
    proxy.kill('SIGTERM');
    const kill = setTimeout(() => proxy.kill('SIGKILL'), graceSeconds * 1000);
    void proxy.exited.then(() => {
      clearTimeout(kill);
      run.proxy = undefined;
      finish();
    });
  }

  /** Deletion with grace 0 (or of an unscheduled Pod): gone now, its process killed. */
  kill(pod: StoredPod): void {
    const run = this.runs.get(pod);
    if (run) {
      run.stopping = true;
      this.clear(run);
      run.proxy?.kill('SIGKILL');
      this.runs.delete(pod);
    }
    this.removeVolumes(pod);
    this.o.store.removePod(pod);
  }

  /** The node evicts the Pod (memory pressure): its process dies and it stays, phase Failed. */
  evict(pod: StoredPod): void {
    const run = this.runs.get(pod);
    if (run) {
      run.stopping = true;
      this.clear(run);
      run.proxy?.kill('SIGKILL');
    }
    pod.status = {
      ...pod.status,
      phase: 'Failed',
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
      conditions: withConditions(pod, { Ready: false, ContainersReady: false }),
      containerStatuses: (pod.status.containerStatuses ?? []).map((c) => ({
        ...c,
        ready: false,
        started: false,
        state: { terminated: { reason: 'Error', exitCode: 137 } },
      })),
    };
    this.o.store.touch(pod);
  }

  /**
   * The Pod's node is lost (see node-lifecycle.ts): its process is out of reach (killed here), the
   * node lifecycle controller sets Ready False, the phase stays Running, and no kubelet answers again.
   */
  lose(pod: StoredPod): void {
    const run = this.runs.get(pod);
    if (!run) return;
    run.lost = true;
    run.stopping = true;
    this.clear(run);
    run.proxy?.kill('SIGKILL');
    pod.status.conditions = withConditions(pod, { Ready: false, ContainersReady: false });
    for (const status of pod.status.containerStatuses ?? []) status.ready = false;
    this.o.store.touch(pod);
  }

  /** The proxy process crashes (SIGKILL): restartPolicy Always brings it back. */
  crash(pod: StoredPod): boolean {
    const proxy = this.runs.get(pod)?.proxy;
    proxy?.kill('SIGKILL');
    return proxy !== undefined;
  }

  /** Stops every process and timer (the fake is closing). */
  async close(): Promise<void> {
    this.closed = true;
    const exits: Promise<void>[] = [];
    for (const run of this.runs.values()) {
      run.stopping = true;
      this.clear(run);
      if (run.proxy) {
        run.proxy.kill('SIGKILL');
        exits.push(run.proxy.exited);
      }
    }
    this.runs.clear();
    await Promise.all(exits);
  }

  private schedule(pod: StoredPod, run: Run): void {
    if (run.stopping || pod.metadata.deletionTimestamp) return;
    const placed = schedule(pod, this.o.nodes, this.o.store.listPods());
    if ('unschedulable' in placed) {
      const before = JSON.stringify(pod.status.conditions);
      pod.status.conditions = withConditions(pod, { PodScheduled: false }, 'Unschedulable', placed.unschedulable);
      if (JSON.stringify(pod.status.conditions) !== before) this.o.store.touch(pod);
      return void this.later(run, 500, () => this.schedule(pod, run));
    }
    pod.spec.nodeName = placed.node.name;
    pod.status.hostIP = placed.node.ip;
    pod.status.conditions = withConditions(pod, { PodScheduled: true });
    this.o.store.touch(pod);
    this.later(run, this.o.timing.startMs, () => void this.start(pod, run, placed.node));
  }

  private waiting(pod: StoredPod, reason: string, message: string): void {
    const prior = pod.status.containerStatuses?.[0];
    if (prior?.state.waiting?.reason === reason) return;
    pod.status.containerStatuses = containerStatuses(pod, { waiting: { reason, message } }, prior?.restartCount ?? 0);
    pod.status.conditions = withConditions(pod, { Ready: false, ContainersReady: false });
    this.o.store.touch(pod);
  }

  private async start(pod: StoredPod, run: Run, node: FakeNode): Promise<void> {
    if (run.stopping || pod.metadata.deletionTimestamp) return;
    const retry = (ms: number) => this.later(run, ms, () => void this.start(pod, run, node));
    const source = configSource(pod, this.o.dir);
    const secret = source && this.o.store.findSecret(pod.metadata.namespace, source.secretName);
    if (source && !secret) {
      this.waiting(pod, 'ContainerCreating', `MountVolume.SetUp failed: secret "${source.secretName}" not found`);
      return retry(300);
    }
    if (this.o.faults.imagePullFails) {
      const first = pod.status.containerStatuses?.[0]?.state.waiting?.reason !== 'ErrImagePull';
      this.waiting(
        pod,
        first ? 'ErrImagePull' : 'ImagePullBackOff',
        `failed to pull image "${pod.spec.containers[0]?.image}"`,
      );
      return retry(500);
    }
    const onHost = pod.spec.hostNetwork === true || pod.spec.containers[0]?.ports?.some((p) => p.hostPort) === true;
    run.podIp ??= pod.spec.hostNetwork ? node.ip : this.allocateIp();
    run.host = onHost ? node.ip : run.podIp;
    if (pod.status.phase !== 'Running') {
      pod.status = {
        ...pod.status,
        phase: 'Running',
        podIP: run.podIp,
        podIPs: [{ ip: run.podIp }],
        startTime: stamp(),
        conditions: withConditions(pod, { Initialized: true, Ready: false, ContainersReady: false }),
      };
    }
    const read =
      source && secret ? readConfig(secret, source.key) : { error: 'the container has no config file to run' };
    if ('error' in read) return this.restartLater(pod, run, node, read.error);
    const initFailed = await this.initialize(pod, run);
    if (initFailed) return this.restartLater(pod, run, node, initFailed);
    const sidecars = pod.spec.containers
      .slice(1)
      .map((c) => tlsSidecarSettings(pod, c, this.secretOf(pod), this.o.dir));
    for (const sidecar of sidecars) {
      if ('error' in sidecar) return this.restartLater(pod, run, node, sidecar.error);
      if (sidecar.proxyPort !== configuredPort(read.config))
        return this.restartLater(pod, run, node, `stunnel forwards to port ${sidecar.proxyPort}, not the proxy's`);
    }
    if (this.closed || run.stopping) return;
    const host = run.host;
    const name = pod.metadata.name;
    const proxy = together([
      startProxy(name, host, read.config, this.o.markers, this.o.dir),
      ...sidecars.flatMap((s) => ('error' in s ? [] : [startTlsSidecar(name, host, s, this.o.markers, this.o.dir)])),
    ]);
    run.proxy = proxy;
    try {
      await proxy.ready;
    } catch (err) {
      return this.restartLater(pod, run, node, err instanceof Error ? err.message : String(err));
    }
    if (run.stopping) return void proxy.kill('SIGKILL');
    pod.status.containerStatuses = containerStatuses(pod, { running: { startedAt: stamp() } }, run.restarts);
    this.o.store.touch(pod);
    void proxy.exited.then(() => {
      if (run.proxy === proxy) run.proxy = undefined;
      if (!run.stopping) this.restartLater(pod, run, node, 'the proxy process exited');
    });
    this.probe(pod, run);
  }

  /** restartPolicy Always: CrashLoopBackOff, then start again with a growing delay. */
  private restartLater(pod: StoredPod, run: Run, node: FakeNode, message: string): void {
    if (run.stopping) return;
    run.restarts++;
    this.waiting(pod, 'CrashLoopBackOff', `back-off restarting failed container: ${message}`);
    for (const status of pod.status.containerStatuses ?? []) status.restartCount = run.restarts;
    this.later(run, Math.min(5000, 200 * 2 ** Math.min(run.restarts, 5)), () => void this.start(pod, run, node));
  }

  /**
   * The readiness probes: a TCP connect to each container's probe port every `probeMs`; the Pod is
   * Ready when every container is (https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/#pod-conditions).
   */
  private probe(pod: StoredPod, run: Run): void {
    const ports = pod.spec.containers.flatMap((container) => {
      const target = container.readinessProbe?.tcpSocket?.port;
      const port = typeof target === 'string' ? container.ports?.find((p) => p.name === target)?.containerPort : target;
      return port === undefined ? [] : [port];
    });
    const tick = async () => {
      const host = run.host;
      if (run.stopping || !run.proxy || !host) return;
      const ok = (await Promise.all(ports.map((port) => tcpProbe(host, port)))).every(Boolean);
      const ready = pod.status.conditions.find((c) => c.type === 'Ready')?.status === 'True';
      if (ok !== ready && !run.stopping) {
        pod.status.conditions = withConditions(pod, { Ready: ok, ContainersReady: ok });
        for (const status of pod.status.containerStatuses ?? []) status.ready = ok;
        this.o.store.touch(pod);
      }
      this.later(run, this.o.timing.probeMs, () => void tick());
    };
    this.later(run, this.o.timing.probeMs, () => void tick());
  }

  /**
   * Runs the Pod's init containers in order, once per Pod (again after a container restart they do
   * not: https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#pod-restart-reasons).
   *
   * @returns why one failed, or undefined
   */
  private async initialize(pod: StoredPod, run: Run): Promise<string | undefined> {
    if (run.initialized) return undefined;
    for (const container of pod.spec.initContainers ?? []) {
      const failed = await runInitContainer(pod, container, this.o.dir);
      if (failed) return failed;
    }
    run.initialized = true;
    return undefined;
  }

  private secretOf(pod: StoredPod) {
    return (name: string) => this.o.store.findSecret(pod.metadata.namespace, name);
  }

  /** The Pod's emptyDir volumes go with it. */
  private removeVolumes(pod: StoredPod): void {
    rmSync(dirname(emptyDirOf(this.o.dir, pod, 'any')), { recursive: true, force: true });
  }

  private remove(pod: StoredPod, run: Run): void {
    if (this.o.faults.stuckTerminating) return void this.later(run, 200, () => this.remove(pod, run));
    this.clear(run);
    this.runs.delete(pod);
    this.removeVolumes(pod);
    this.o.store.removePod(pod);
  }

  private allocateIp(): string {
    const n = this.nextIp++;
    return `${this.o.ipPrefix}.${Math.floor(n / 250)}.${(n % 250) + 2}`;
  }

  private later(run: Run, ms: number, fn: () => void): void {
    if (this.closed) return;
    const timer = setTimeout(() => {
      run.timers.delete(timer);
      fn();
    }, ms);
    run.timers.add(timer);
  }

  private clear(run: Run): void {
    for (const t of run.timers) clearTimeout(t);
    run.timers.clear();
  }
}
