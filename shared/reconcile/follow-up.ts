/**
 * "Look again at T" without an error: a check that wants another look at some proxies (or pools)
 * soon publishes a follow-up check message carrying `dueAt`, and acknowledges its own message. The
 * invocation that receives the follow-up holds it until `dueAt` (at most {@link MAX_HOLD_MS}; a
 * later one is published again, unchanged), then checks only those names.
 *
 * Pub/Sub has no delayed delivery. Failing the message (an HTTP 500) to have it redelivered would
 * wait the subscription's backoff (10–600 s in production, not the 2 s asked for), count each try
 * toward dead-lettering and fill error dashboards; the wait happens in the receiving invocation
 * instead, on the emulator exactly as in production, and costs nothing when nothing is due.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Bus } from '../bus/pubsub.js';
import { TOPICS } from '../bus/topics.js';

/** Looks further away than this are left to the next sweep (which is every proxy's retry anyway). */
export const MAX_FOLLOW_UP_MS = 30_000;

/** One proxy or pool that wants another look after `afterMs`. */
export interface Recheck {
  kind: 'names' | 'pools';
  name: string;
  afterMs: number;
}

/** What a follow-up carries over from the message that asked for it. */
export interface FollowUpOptions {
  verifyEgress?: boolean;
}

/**
 * The follow-ups this instance has published that are not due yet, by proxy (or pool): a check
 * that wants another look no earlier than one already on its way leaves the look to that one.
 *
 * Without it, every message that looks at a proxy still waiting for something (a kick, a relay's
 * report, a duplicate copy of a follow-up) started a chain of follow-ups of its own, and the chains
 * ran side by side until the proxy settled: a duplicated follow-up doubled its chain, and a proxy
 * that never settles (libvirt's test driver serves `Unhealthy`) multiplied them without end
 * (7,440 check deliveries in 220 s in the redelivery suite). A published message is delivered at
 * least once, so the look is not lost; another instance of the function keeps its own ledger
 * (chains merge per instance), and the sweep stays every proxy's retry.
 */
export class FollowUpLedger {
  private readonly due = new Map<string, number>();

  /** At most this many entries; past it, the ones already due are dropped (then the oldest). */
  constructor(private readonly limit = 10_000) {}

  /** Whether a follow-up for `key` is on its way, due after `now` and no later than `dueAt`. */
  covers(key: string, dueAt: number, now: number): boolean {
    const pending = this.due.get(key);
    return pending !== undefined && pending > now && pending <= dueAt;
  }

  /**
   * A follow-up for `key` due at `dueAt` is being handled: it (and any due before it) is no longer
   * on its way, so the check it runs may ask for the next one. Without this, a hold that ended a
   * millisecond before `dueAt` by the wall clock would find its own follow-up still "on its way"
   * and end the chain: Node's timers count whole milliseconds of a monotonic clock, and 3 of 300
   * `sleep(dueAt - Date.now())` here woke with `Date.now() < dueAt`.
   */
  arrived(key: string, dueAt: number): void {
    const pending = this.due.get(key);
    if (pending !== undefined && pending <= dueAt) this.due.delete(key);
  }

  /** Notes a follow-up for `key`, published, due at `dueAt`. */
  record(key: string, dueAt: number, now: number): void {
    if (this.due.size >= this.limit) {
      for (const [k, at] of this.due) if (at <= now) this.due.delete(k);
      for (const k of this.due.keys()) {
        if (this.due.size < this.limit) break;
        this.due.delete(k);
      }
    }
    this.due.delete(key);
    this.due.set(key, dueAt);
  }
}

/** The ledger's key of a follow-up: the kind, the name, and whether it verifies egress. */
export function followUpKey(kind: Recheck['kind'], name: string, verifyEgress: boolean): string {
  return `${kind}/${name}${kind === 'names' && verifyEgress ? '/verify' : ''}`;
}

/**
 * Publishes the follow-ups for `rechecks` due within {@link MAX_FOLLOW_UP_MS}: one message per
 * kind and whole second of delay (so a proxy due in 25 s is not looked at with one due in 2 s),
 * at most 100 names each. With a `ledger`, a name that already has a follow-up on its way due no
 * later is left to it.
 *
 * @returns the messages published
 */
export async function publishFollowUps(
  bus: Bus,
  rechecks: Recheck[],
  now: number,
  options: FollowUpOptions = {},
  ledger?: FollowUpLedger,
): Promise<number> {
  const verify = options.verifyEgress === true;
  const keyOf = (kind: Recheck['kind'], name: string) => followUpKey(kind, name, verify);
  const groups = new Map<string, { kind: Recheck['kind']; dueAt: number; names: Set<string> }>();
  for (const r of rechecks) {
    if (!(r.afterMs >= 0) || r.afterMs > MAX_FOLLOW_UP_MS) continue;
    const seconds = Math.ceil(r.afterMs / 1000);
    if (ledger?.covers(keyOf(r.kind, r.name), now + seconds * 1000, now)) continue;
    const key = `${r.kind}/${seconds}`;
    const group = groups.get(key) ?? { kind: r.kind, dueAt: now + seconds * 1000, names: new Set<string>() };
    group.names.add(r.name);
    groups.set(key, group);
  }
  let published = 0;
  for (const { kind, dueAt, names } of groups.values()) {
    const all = [...names];
    for (let i = 0; i < all.length; i += 100) {
      const chunk = all.slice(i, i + 100);
      const extra = kind === 'names' && verify ? { verifyEgress: true } : {};
      await bus.publish(TOPICS.proxyChecks, { [kind]: chunk, dueAt, ...extra });
      for (const name of chunk) ledger?.record(keyOf(kind, name), dueAt, now);
      published++;
    }
  }
  return published;
}

/**
 * The longest one invocation holds a follow-up before its `dueAt`. Pushes share a subscription's
 * window of messages in flight — the Pub/Sub emulator's is two — so a follow-up held for 20 s
 * held back every kick behind it (a pool moving members back paused 20 s per member). A follow-up
 * due later than this is held this long, then published again with the same `dueAt`.
 */
export const MAX_HOLD_MS = 2_000;

/**
 * Holds a follow-up until `dueAt` if that is at most {@link MAX_HOLD_MS} away; a later one is held
 * that long and then is not yet due. A `dueAt` further than {@link MAX_FOLLOW_UP_MS} ahead, which no
 * publisher asks for, comes from a skewed clock: it is due now.
 *
 * @param wait - how to wait (tests pass one that advances their clock)
 * @returns whether the follow-up is due once the hold is over (false: publish it again)
 */
export async function holdUntilDue(
  dueAt: number | undefined,
  now: number,
  wait: (ms: number) => Promise<unknown> = sleep,
): Promise<boolean> {
  if (dueAt === undefined || dueAt <= now || dueAt - now > MAX_FOLLOW_UP_MS) return true;
  await wait(Math.min(dueAt - now, MAX_HOLD_MS));
  return dueAt - now <= MAX_HOLD_MS;
}
