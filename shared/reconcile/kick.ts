/**
 * Asking for checks: a message on \`proxy-checks\`. Apart from the check itself so that a caller that
 * only asks (the API's reports route) does not bundle the reconcile and its location database.
 */
import type { Bus } from '../bus/pubsub.js';
import { TOPICS } from '../bus/topics.js';
import { dnsLabel } from '../domain/names.js';

/** Asks for a check of these proxies soon (after a request, or when their instances changed). */
export async function kickChecks(bus: Bus, names: string[], extra: { verifyEgress?: boolean } = {}): Promise<void> {
  const valid = [...new Set(names)].filter((n) => dnsLabel.safeParse(n).success);
  for (let i = 0; i < valid.length; i += 100) {
    await bus.publish(TOPICS.proxyChecks, { names: valid.slice(i, i + 100), ...extra });
  }
}

/** Asks for a reconcile of these pools soon. */
export async function kickPools(bus: Bus, names: string[]): Promise<void> {
  const valid = [...new Set(names)].filter((n) => dnsLabel.safeParse(n).success);
  for (let i = 0; i < valid.length; i += 100) await bus.publish(TOPICS.proxyChecks, { pools: valid.slice(i, i + 100) });
}
