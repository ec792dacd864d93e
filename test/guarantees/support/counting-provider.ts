/** A Provider wrapper that counts calls per instance, tracks overlapping mutations, and can inject faults. */
import type { Instance, InstanceSpec, Provider, ProviderHealth, Registry } from '../../../shared/providers/contract.js';

export type ProviderOp = 'create' | 'get' | 'delete' | 'list' | 'check';

/**
 * Runs around every call. `before` may throw (the call fails without reaching the provider) or
 * wait (a slow backend); `after` sees the outcome and may throw too (the caller then sees a failure
 * although the provider acted).
 */
export interface ProviderHooks {
  before?(op: ProviderOp, target: string | undefined): Promise<void> | void;
  after?(op: ProviderOp, target: string | undefined, error: unknown): Promise<void> | void;
  /** Replaces the listing (a partial or foreign one); gets the real one. */
  list?(real: Instance[]): Instance[];
}

/** What the wrapper saw. */
export class ProviderStats {
  readonly calls = new Map<ProviderOp, number>();
  /** Mutating calls per instance name. */
  readonly creates = new Map<string, number>();
  readonly deletes = new Map<string, number>();
  /** Instances with a create or delete in flight, and the most that ever overlapped on one instance. */
  private readonly inFlight = new Map<string, number>();
  maxOverlap = 0;
  /** Instances that saw two creates in flight at once. */
  readonly overlappingCreates = new Set<string>();
  private readonly creating = new Map<string, number>();

  count(op: ProviderOp): number {
    return this.calls.get(op) ?? 0;
  }

  /** Marks the start of a call; returns the function that marks its end. */
  begin(op: ProviderOp, target: string | undefined): () => void {
    this.calls.set(op, this.count(op) + 1);
    if (target === undefined || (op !== 'create' && op !== 'delete')) return () => undefined;
    const tally = op === 'create' ? this.creates : this.deletes;
    tally.set(target, (tally.get(target) ?? 0) + 1);
    const running = (this.inFlight.get(target) ?? 0) + 1;
    this.inFlight.set(target, running);
    this.maxOverlap = Math.max(this.maxOverlap, running);
    if (op === 'create') {
      const creating = (this.creating.get(target) ?? 0) + 1;
      this.creating.set(target, creating);
      if (creating > 1) this.overlappingCreates.add(target);
    }
    return () => {
      this.inFlight.set(target, (this.inFlight.get(target) ?? 1) - 1);
      if (op === 'create') this.creating.set(target, (this.creating.get(target) ?? 1) - 1);
    };
  }
}

/** Wraps one provider; the wrapper keeps the provider's name, type and probing mode. */
export function countingProvider(inner: Provider, stats: ProviderStats, hooks: ProviderHooks = {}): Provider {
  const call = async <T>(op: ProviderOp, target: string | undefined, fn: () => Promise<T>): Promise<T> => {
    const end = stats.begin(op, target);
    try {
      await hooks.before?.(op, target);
      let error: unknown;
      try {
        return await fn();
      } catch (err) {
        error = err;
        throw err;
      } finally {
        await hooks.after?.(op, target, error);
      }
    } finally {
      end();
    }
  };
  const wrapped: Provider = {
    name: inner.name,
    type: inner.type,
    probesRemotely: inner.probesRemotely,
    resolvePlacement: (placement) => inner.resolvePlacement(placement),
    create: (spec: InstanceSpec) => call('create', spec.name, () => inner.create(spec)),
    get: (name: string) => call('get', name, () => inner.get(name)),
    delete: (name: string) => call('delete', name, () => inner.delete(name)),
    list: () =>
      call('list', undefined, async () => {
        const real = await inner.list();
        return hooks.list ? hooks.list(real) : real;
      }),
  };
  const check = inner.check?.bind(inner);
  if (check) wrapped.check = (): Promise<ProviderHealth> => call('check', undefined, check);
  return wrapped;
}

/** A registry whose providers are all wrapped by {@link countingProvider} with one set of stats and hooks. */
export function countingRegistry(
  inner: Registry,
  stats: ProviderStats,
  hooks: ProviderHooks = {},
): Registry & { stats: ProviderStats } {
  const wrapped = new Map(inner.all().map((p) => [p.name, countingProvider(p, stats, hooks)]));
  return {
    stats,
    get: (name) => wrapped.get(name),
    missing: (name) => inner.missing(name),
    all: () => [...wrapped.values()],
  };
}
