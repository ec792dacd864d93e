/**
 * Crash points, armed per proxy from the test: where an invocation dies (throws), hangs (a timed-out
 * function) or is paused and resumes later (a zombie), and which messages are lost on the way.
 */
import type { BusMessage } from '../../../shared/bus/message.js';
import type { Bus } from '../../../shared/bus/pubsub.js';
import type { RelayBackend } from '../../../relay/backends/backend.js';
import { relayReportSchema, wireCommandSchema } from '../../../shared/wire/protocol.js';
import type { ProviderHooks } from './counting-provider.js';
import { Crash, type CrashHook } from './faulty-store.js';
import type { Figures } from './figures.js';
import { iname } from './world.js';

export type FaultPoint =
  /** The lease was taken; the function dies before the provider call (the lease stays until its TTL). */
  | 'lease-taken'
  /** The provider was called; the function dies before the status write. */
  | 'after-provider-call'
  /** The status was written; the function dies before acknowledging (the message is redelivered). */
  | 'after-status-write'
  /** The relay command was recorded; the function times out before publishing it. */
  | 'publish-lost'
  /** The relay report carrying the command's result never reaches the function. */
  | 'report-lost'
  /** The lease was taken, then the function is paused past the lease and resumes later (a zombie). */
  | 'paused-past-lease'
  /** GC asked the provider to delete an orphan; the GC function times out there. */
  | 'gc-dies-after-delete'
  /**
   * The relay's backend carried out the command, then the relay dies before recording it in its
   * ledger, acknowledging it or reporting its result (the call never returns; the test restarts
   * the relay).
   */
  | 'relay-dies-mid-command';

/** A promise that never settles: an invocation that hangs until its function times out. */
export const hang = (): Promise<never> => new Promise<never>(() => undefined);

interface Armed {
  point: FaultPoint;
  proxy: string;
  skip: number;
  fired: boolean;
}

/** The armed crash points and the gates holding paused invocations. */
export class Faults {
  private readonly armed: Armed[] = [];
  private readonly gates = new Map<string, () => void>();

  constructor(private readonly figures: Figures) {}

  /** Arms `point` for `proxy`: it fires on the (skip+1)-th time the proxy passes that point. */
  arm(point: FaultPoint, proxy: string, skip = 0): void {
    this.armed.push({ point, proxy, skip, fired: false });
  }

  /** Whether the point fires now for this proxy (or its instance name); firing disarms it. */
  fire(point: FaultPoint, proxyOrInstance: string): boolean {
    const entry = this.armed.find(
      (a) => !a.fired && a.point === point && (a.proxy === proxyOrInstance || iname(a.proxy) === proxyOrInstance),
    );
    if (!entry) return false;
    if (entry.skip > 0) {
      entry.skip--;
      return false;
    }
    entry.fired = true;
    this.figures.add('crashPointsInjected');
    this.figures.add(`crash:${point}`);
    return true;
  }

  fired(point: FaultPoint, proxy: string): boolean {
    return this.armed.some((a) => a.fired && a.point === point && a.proxy === proxy);
  }

  /** Pauses the caller until {@link release} (for `proxy`). */
  pause(proxy: string): Promise<void> {
    return new Promise<void>((resolve) => this.gates.set(proxy, resolve));
  }

  /** Lets a paused invocation go on (a zombie resuming). */
  release(proxy: string): void {
    this.gates.get(proxy)?.();
    this.gates.delete(proxy);
  }

  /** The store's crash hook. */
  readonly storeHook: CrashHook = async (point, proxy, detail) => {
    if (point === 'acquireLease:after' && detail.result !== undefined) {
      if (this.fire('lease-taken', proxy)) throw new Crash(`lease-taken ${proxy}`);
      if (this.fire('paused-past-lease', proxy)) await this.pause(proxy);
    }
    if (point === 'writeStatus:before' && detail.holder && this.fire('after-provider-call', proxy))
      throw new Crash(`after-provider-call ${proxy}`);
    if (point === 'writeStatus:after' && detail.holder && this.fire('after-status-write', proxy))
      throw new Crash(`after-status-write ${proxy}`);
  };

  /** Provider hooks (GC's view of the provider). */
  readonly providerHooks: ProviderHooks = {
    after: async (op, target) => {
      if (op === 'delete' && target && this.fire('gc-dies-after-delete', target)) await hang();
    },
  };

  /** Wraps a relay backend: an armed `relay-dies-mid-command` acts, then never returns. */
  relayBackend(inner: RelayBackend): RelayBackend {
    const dies = async <T>(target: string, act: () => Promise<T>): Promise<T> => {
      const result = await act();
      if (this.fire('relay-dies-mid-command', target)) return hang();
      return result;
    };
    return {
      name: inner.name,
      type: inner.type,
      probesRemotely: inner.probesRemotely,
      resolvePlacement: (placement) => inner.resolvePlacement(placement),
      create: (spec) => dies(spec.name, () => inner.create(spec)),
      delete: (name) => dies(name, () => inner.delete(name)),
      get: (name) => inner.get(name),
      list: () => inner.list(),
      check: () => inner.check(),
      credentials: (name) => inner.credentials(name),
      close: () => inner.close(),
    };
  }

  /** Wraps the bus relay commands go out on: an armed `publish-lost` never publishes and hangs. */
  commandBus(inner: Bus): Bus {
    return {
      publish: (topic, data, attributes, sign) => {
        // As published: a create's credentials are sealed for the relay (shared/wire/command-wire.ts).
        const command = wireCommandSchema.safeParse(data);
        const target = command.success
          ? command.data.kind === 'create'
            ? command.data.spec.name
            : command.data.name
          : '';
        if (this.fire('publish-lost', target)) return hang();
        return inner.publish(topic, data, attributes, sign);
      },
    };
  }

  /** The report pump: an armed `report-lost` drops the report carrying that instance's result. */
  readonly deliverReport = async (message: BusMessage, apply: (m: BusMessage) => Promise<string>): Promise<void> => {
    const report = relayReportSchema.safeParse(message.json);
    // Every result is offered (no short cut): each armed point counts the reports it passes.
    const lost = report.success ? report.data.results.filter((r) => this.fire('report-lost', r.name)) : [];
    if (lost.length === 0) await apply(message);
  };
}
