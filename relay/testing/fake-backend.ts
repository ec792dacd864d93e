/** An in-memory RelayBackend for tests of the agent, commands and reports (no processes). */
import { NotFoundError } from '../../shared/errors.js';
import type { Credentials, Instance, InstanceSpec, ProviderHealth } from '../../shared/providers/contract.js';
import type { RelayBackend } from '../backends/backend.js';

/** One call the fake saw, with whether another call on the same name was running meanwhile. */
export interface FakeCall {
  op: 'create' | 'delete';
  name: string;
  overlapped: boolean;
}

/** A fake backend that records calls and can be told to fail or be slow. */
export class FakeBackend implements RelayBackend {
  readonly type = 'process';
  readonly probesRemotely = true;
  readonly instances = new Map<string, Instance & { credentials: Credentials }>();
  readonly calls: FakeCall[] = [];
  /** Milliseconds each create/delete takes. */
  delayMs = 0;
  /** Return an error to make the next matching call throw it. */
  fail: (op: 'create' | 'delete' | 'list' | 'check', name: string) => Error | undefined = () => undefined;
  private readonly busy = new Set<string>();
  private nextPort = 30000;

  /** @param now - the clock instances are created by (their `createdAt`) */
  constructor(
    readonly name: string,
    private readonly now: () => number = Date.now,
  ) {}

  resolvePlacement(placement: Record<string, unknown>): Record<string, unknown> {
    return placement;
  }

  async create(spec: InstanceSpec): Promise<Instance> {
    return this.op('create', spec.name, () => {
      const existing = this.instances.get(spec.name);
      if (existing) return existing;
      const instance = {
        name: spec.name,
        proxy: spec.proxy,
        installationId: spec.installationId,
        specHash: spec.specHash,
        state: 'Running' as const,
        ip: '127.0.0.1',
        port: spec.port || this.nextPort++,
        createdAt: this.now(),
        credentials: spec.credentials,
      };
      this.instances.set(spec.name, instance);
      return instance;
    });
  }

  get(name: string): Promise<Instance> {
    const instance = this.instances.get(name);
    return instance ? Promise.resolve(instance) : Promise.reject(new NotFoundError(`instance ${name} not found`));
  }

  async delete(name: string): Promise<void> {
    await this.op('delete', name, () => this.instances.delete(name));
  }

  list(): Promise<Instance[]> {
    const error = this.fail('list', '');
    if (error) return Promise.reject(error);
    return Promise.resolve([...this.instances.values()].map(({ credentials: _secret, ...instance }) => instance));
  }

  check(): Promise<ProviderHealth> {
    const error = this.fail('check', '');
    return Promise.resolve(
      error ? { ok: false, message: error.message, latencyMs: 0 } : { ok: true, message: 'fake', latencyMs: 0 },
    );
  }

  credentials(name: string): Promise<Credentials | undefined> {
    return Promise.resolve(this.instances.get(name)?.credentials);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  private async op<T>(op: 'create' | 'delete', name: string, effect: () => T): Promise<T> {
    const call: FakeCall = { op, name, overlapped: this.busy.has(name) };
    this.calls.push(call);
    this.busy.add(name);
    try {
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs));
      const error = this.fail(op, name);
      if (error) throw error;
      return effect();
    } finally {
      this.busy.delete(name);
    }
  }
}
