/**
 * The fake's state: instances and zone operations per project, moving through their states on
 * timers as Compute's do (PROVISIONING → STAGING → RUNNING; STOPPING → TERMINATED or gone), with
 * operations that finish asynchronously, DONE with or without `error`.
 */
import { randomBytes } from 'node:crypto';
import { alreadyExists, notFound, notReady, OPERATION_ERRORS } from './errors.js';
import { parseUserData, type GuestProcess, type GuestRunner } from './guest.js';
import type { InsertBody } from './insert-body.js';
import type { ResolvedNic } from './networks.js';
import type { Op, Timing, Vm } from './resources.js';

let ids = BigInt(Date.now()) * 1000n;
const nextId = () => String(++ids);

/** The guest's pause between PUT attempts, compressed (the script sleeps 5 s). */
const PUT_RETRY_MS = 20;

export class World {
  readonly vms = new Map<string, Vm>();
  /** The metadata server loses this many of the next guest-attribute PUTs (of any VM). */
  lostPuts = 0;
  readonly ops = new Map<string, Op>();
  private readonly timers = new Set<NodeJS.Timeout>();
  /** External addresses: a random loopback /24 of this fake (Linux routes all of 127/8 to `lo`). */
  private readonly subnet = `127.${16 + (randomBytes(1).readUInt8() % 224)}.${randomBytes(1).readUInt8() % 255}.`;
  /** Internal addresses (`networkIP`): the next /24, so the guest listens on an address of its own, reachable here. */
  private readonly internalSubnet = this.subnet.replace(/\.(\d+)\.$/, (_, c: string) => `.${Number(c) + 1}.`);
  private hostCounter = 1;
  private internalCounter = 0;

  constructor(
    private readonly timing: Timing,
    private readonly guests: GuestRunner,
  ) {}

  static key = (project: string, zone: string, name: string) => `${project}/${zone}/${name}`;

  vm(project: string, zone: string, name: string): Vm | undefined {
    return this.vms.get(World.key(project, zone, name));
  }

  op(project: string, zone: string, name: string): Op | undefined {
    return this.ops.get(World.key(project, zone, name));
  }

  /** Accepts an insert: the instance exists at once (PROVISIONING); its operation finishes later. */
  insert(
    project: string,
    zone: string,
    body: InsertBody,
    nic: ResolvedNic,
    requestId: string | undefined,
    failure?: { code: string; location?: string | undefined; afterMs?: number | undefined },
  ): Op {
    if (requestId) {
      // A repeated requestId within the retention window answers with the original operation.
      const seen = [...this.ops.values()].find((o) => o.project === project && o.requestId === requestId);
      if (seen) return seen;
    }
    const path = `projects/${project}/zones/${zone}/instances/${body.name}`;
    if (this.vm(project, zone, body.name)) throw alreadyExists(path);
    const vm: Vm = {
      project,
      zone,
      name: body.name,
      id: nextId(),
      status: 'PROVISIONING',
      createdAt: Date.now(),
      body,
      nic,
      natIP: '',
      // Assigned at insert, kept across stops (unlike the ephemeral external address).
      networkIP: `${this.internalSubnet}${(this.internalCounter++ % 250) + 2}`,
      attributes: new Map(),
      startedAt: 0,
      boots: 0,
      puts: 0,
    };
    const op = this.newOp(project, zone, 'insert', vm, requestId);
    vm.busy = op.name;
    this.vms.set(World.key(project, zone, vm.name), vm);
    if (failure) {
      this.after(failure.afterMs ?? this.timing.provisioningMs, () => {
        this.vms.delete(World.key(project, zone, vm.name));
        const known = OPERATION_ERRORS[failure.code];
        this.finish(op, { code: failure.code, message: known?.message ?? failure.code, location: failure.location });
      });
      return op;
    }
    this.after(this.timing.provisioningMs, () => {
      if (vm.status !== 'PROVISIONING') return;
      vm.status = 'STAGING';
      vm.natIP = this.allocateAddress();
      this.after(this.timing.stagingMs, () => {
        if (vm.status !== 'STAGING') return;
        vm.status = 'RUNNING';
        vm.busy = undefined;
        this.boot(vm);
        this.finish(op);
      });
    });
    return op;
  }

  /** Deletes an instance: STOPPING at once (the guest halts), gone when the operation is DONE. */
  delete(project: string, zone: string, name: string): Op {
    const vm = this.vm(project, zone, name);
    const path = `projects/${project}/zones/${zone}/instances/${name}`;
    if (!vm) throw notFound(path);
    if (vm.busy) throw notReady(path);
    const op = this.newOp(project, zone, 'delete', vm, undefined);
    vm.busy = op.name;
    vm.status = 'STOPPING';
    void this.halt(vm);
    this.after(this.timing.deletingMs, () => {
      this.vms.delete(World.key(project, zone, name));
      this.finish(op);
    });
    return op;
  }

  /** Out of band (a person, a host error, a preemption): the VM stops and ends TERMINATED. */
  stop(vm: Vm): void {
    vm.status = 'STOPPING';
    void this.halt(vm);
    this.after(this.timing.stoppingMs, () => {
      if (vm.status !== 'STOPPING') return;
      vm.status = 'TERMINATED';
      // A stopped VM gives its ephemeral external address back.
      vm.natIP = '';
    });
  }

  /**
   * A hard reset (instances.reset, or a host error's restart with automaticRestart): the guest
   * stops without shutdown and boots again, RUNNING throughout. Its guest attributes are cleared,
   * as on a stop; whether Compute keeps them across a reset is not documented (not verified).
   */
  reset(vm: Vm): void {
    void this.halt(vm).then(() => {
      if (vm.status === 'RUNNING') this.boot(vm);
    });
  }

  /** Resolves when `op` is DONE or after `maxMs`, whichever comes first. */
  waitFor(op: Op, maxMs: number, aborted: AbortSignal): Promise<void> {
    if (op.status === 'DONE') return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        op.waiters.delete(done);
        resolve();
      };
      const timer = setTimeout(done, maxMs);
      op.waiters.add(done);
      aborted.addEventListener('abort', done, { once: true });
    });
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
    for (const op of this.ops.values()) for (const w of [...op.waiters]) w();
    await Promise.all([...this.vms.values()].map((vm) => this.halt(vm)));
  }

  private newOp(project: string, zone: string, type: Op['type'], vm: Vm, requestId: string | undefined): Op {
    const name = `operation-${Date.now()}-${randomBytes(6).toString('hex')}-${randomBytes(4).toString('hex')}`;
    const op: Op = {
      project,
      zone,
      name,
      id: nextId(),
      type,
      target: vm.name,
      targetId: vm.id,
      status: 'RUNNING',
      insertTime: Date.now(),
      requestId,
      waiters: new Set(),
    };
    this.ops.set(World.key(project, zone, name), op);
    return op;
  }

  private finish(op: Op, error?: Op['error']): void {
    op.status = 'DONE';
    op.endTime = Date.now();
    op.error = error;
    for (const w of [...op.waiters]) w();
  }

  private after(ms: number, fn: () => void): void {
    const t = setTimeout(() => {
      this.timers.delete(t);
      fn();
    }, ms);
    this.timers.add(t);
  }

  private allocateAddress(): string {
    this.hostCounter += 1;
    return `${this.subnet}${(this.hostCounter % 250) + 2}`;
  }

  /**
   * What the guest does at boot: cloud-init applies the user-data and tinyproxy starts (its
   * runcmd only on the first boot), and the guest PUTs its readiness attribute as the user-data says.
   */
  private boot(vm: Vm): void {
    const items = vm.body.metadata?.items ?? [];
    const userData = items.find((i) => i.key === 'user-data')?.value ?? '';
    const attributesEnabled = items.find((i) => i.key === 'enable-guest-attributes')?.value?.toUpperCase() === 'TRUE';
    vm.startedAt = Date.now();
    vm.boots += 1;
    try {
      const config = parseUserData(userData);
      const guest = this.guests.start(vm.name, { internal: vm.networkIP, external: vm.natIP }, config);
      vm.guest = guest;
      const ready = config.readyAttribute;
      const puts = ready && (vm.boots === 1 ? ready.firstBoot : ready.everyBoot) ? ready.attempts : 0;
      guest.ready.then(
        () => {
          if (attributesEnabled && ready && puts > 0) this.put(vm, guest, ready, puts);
        },
        (err: unknown) => (vm.guestError = String(err)),
      );
    } catch (err) {
      vm.guestError = err instanceof Error ? err.message : String(err);
    }
  }

  /** One PUT to the metadata server (lost while `lostPuts` says so), retried `left - 1` more times. */
  private put(vm: Vm, guest: GuestProcess, ready: { key: string; value: string }, left: number): void {
    if (vm.guest !== guest || left <= 0) return;
    vm.puts += 1;
    if (this.lostPuts > 0) {
      this.lostPuts -= 1;
      return this.after(PUT_RETRY_MS, () => this.put(vm, guest, ready, left - 1));
    }
    vm.attributes.set(ready.key, ready.value);
  }

  private async halt(vm: Vm): Promise<void> {
    const guest = vm.guest;
    vm.guest = undefined;
    vm.attributes.clear();
    await guest?.stop();
  }
}
