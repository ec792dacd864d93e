/**
 * The churn of `npm run chaos`: applies, deletes, spec changes and maxAge rotations of a fixed set
 * of names, published on `proxy-requests` as a client would, with what was last asked of each name
 * kept as the expected end state.
 */
import type { PubSub } from '@google-cloud/pubsub';
import { TOPICS } from '../../shared/bus/topics.js';
import type { Rng } from '../guarantees/support/prng.js';

/** What the last successful publish asked of a live proxy. */
export interface Wanted {
  provider: string;
  placement: Record<string, string>;
  port: number;
  maxAge?: string;
  labels: Record<string, string>;
}

export interface ChurnCounts {
  applies: number;
  deletes: number;
  specChanges: number;
  publishRetries: number;
}

/** Two requests for one name this close could share a publish time, and an equal one is a no-op. */
const SAME_NAME_GAP_MS = 50;

export class Churn {
  /** The expected end state: a spec, or null for a deleted proxy. */
  readonly wanted = new Map<string, Wanted | null>();
  readonly counts: ChurnCounts = { applies: 0, deletes: 0, specChanges: 0, publishRetries: 0 };
  private readonly lastPublish = new Map<string, number>();
  /** Each name's last request as published: what to look for in the functions' logs (`messageId`). */
  readonly lastMessage = new Map<string, { action: string; messageId: string; at: number }>();

  constructor(
    private readonly pubsub: PubSub,
    private readonly rng: Rng,
    readonly names: string[],
  ) {}

  /**
   * Applies every name once, none with a maxAge: the fleet must be seen at rest (every proxy Ready,
   * twice in a row) before traffic and faults start, and 500 proxies of which a third rotate every
   * 1–2 minutes are never all Ready at once. Rotations come with the churn's spec changes.
   */
  async rampUp(): Promise<void> {
    for (const name of this.rng.shuffle(this.names)) await this.apply(name, this.freshSpec(name, false));
  }

  /** One random change: a spec change, a delete, a re-apply of a deleted name, or a duplicate apply. */
  async step(): Promise<void> {
    const name = this.rng.pick(this.names);
    const current = this.wanted.get(name);
    if (!current) return this.apply(name, this.freshSpec(name));
    const roll = this.rng.next();
    if (roll < 0.5) {
      this.counts.specChanges++;
      return this.apply(name, this.changed(current));
    }
    if (roll < 0.8) return this.delete(name);
    return this.apply(name, current);
  }

  /** Ends with rotation off, so the fleet can be judged at rest: each live name without maxAge. */
  async quiesce(): Promise<void> {
    for (const [name, w] of this.wanted) {
      if (w?.maxAge === undefined) continue;
      const { maxAge: _off, ...rest } = w;
      await this.apply(name, rest);
    }
  }

  private freshSpec(name: string, rotating = true): Wanted {
    const index = this.names.indexOf(name);
    return {
      provider: index % 2 === 0 ? 'local' : 'local-b',
      placement: {},
      port: 0,
      ...(rotating && this.rng.chance(0.3) ? { maxAge: this.rng.pick(['1m', '2m']) } : {}),
      labels: { chaos: 'yes' },
    };
  }

  /** A change that rolls the instance (placement), rotates it (maxAge) or only relabels it. */
  private changed(w: Wanted): Wanted {
    const kind = this.rng.int(0, 2);
    if (kind === 0) return { ...w, placement: w.placement['bindAddress'] ? {} : { bindAddress: '127.0.0.1' } };
    if (kind === 1) {
      const { maxAge: _old, ...rest } = w;
      return this.rng.chance(0.5) ? { ...rest, maxAge: this.rng.pick(['1m', '2m']) } : rest;
    }
    return { ...w, labels: { chaos: 'yes', round: String(this.rng.int(0, 999)) } };
  }

  private async apply(name: string, w: Wanted): Promise<void> {
    const { labels, ...spec } = w;
    await this.publish(name, 'apply', {
      apiVersion: 'egress.dev/v1',
      kind: 'Proxy',
      action: 'apply',
      metadata: { name, labels },
      spec,
    });
    this.counts.applies++;
    this.wanted.set(name, w);
  }

  private async delete(name: string): Promise<void> {
    await this.publish(name, 'delete', {
      apiVersion: 'egress.dev/v1',
      kind: 'Proxy',
      action: 'delete',
      metadata: { name },
    });
    this.counts.deletes++;
    this.wanted.set(name, null);
  }

  /** Publishes until the emulator takes it (a cut connection fails a publish; a client retries). */
  private async publish(name: string, action: string, json: unknown): Promise<void> {
    const wait = (this.lastPublish.get(name) ?? 0) + SAME_NAME_GAP_MS - Date.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const deadline = Date.now() + 60_000;
    for (let delay = 200; ; delay = Math.min(delay * 2, 2000)) {
      try {
        const messageId = await this.pubsub
          .topic(TOPICS.proxyRequests)
          .publishMessage({ json, attributes: { action } });
        this.lastPublish.set(name, Date.now());
        this.lastMessage.set(name, { action, messageId, at: Date.now() });
        return;
      } catch (err) {
        if (Date.now() > deadline) throw new Error(`publishing ${action} ${name} failed for 60 s`, { cause: err });
        this.counts.publishRetries++;
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
  }
}
