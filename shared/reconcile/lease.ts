/**
 * Lease-then-act: the one way the reconcile makes a mutating provider call (`withLease`), used for
 * a create, a delete, and the last delete before a proxy is finalised.
 */
import { randomUUID } from 'node:crypto';
import { asEgressError, type ErrorInfo } from '../errors.js';
import type { Credentials } from '../store/ports.js';
import type { ReconcileDeps, Subject } from './context.js';

/** The mutating provider call itself, returned by the step that prepares it. */
export type ProviderCall = () => Promise<unknown>;

/**
 * What came of it: not held (the lease was refused, or ran out before the call), or held by
 * `holder` — who must release it with its status write — with the call's error if it failed.
 */
export type Leased = { held: false } | { held: true; holder: string; error?: ErrorInfo };

/**
 * Takes the subject's lease (refused when another worker holds a live one, the generation moved,
 * or the proxy was written since the read of `subject.readAt`), runs `prepare` (the reads the call needs),
 * then the call it returns — unless the lease ran out meanwhile: a worker paused past its lease (a
 * timed-out function resuming later) must not act on its stale decision, another may have acted
 * since (a late delete would kill a new instance).
 *
 * @param credentials - a replaced instance's successor's credentials, stored with the lease (see `ProxyRepository.acquireLease`)
 */
export async function withLease(
  deps: ReconcileDeps,
  subject: Subject,
  prepare: () => Promise<ProviderCall>,
  credentials?: Credentials,
): Promise<Leased> {
  const { doc, log, now } = subject;
  const holder = randomUUID();
  const ttlMs = deps.config.leaseSeconds * 1000;
  const until = await deps.proxies.acquireLease(
    subject.name,
    holder,
    doc.generation,
    ttlMs,
    now,
    subject.readAt,
    credentials,
    doc,
  );
  if (until === undefined) {
    log.debug('lease held elsewhere, or the proxy changed since it was read; skipping');
    return { held: false };
  }
  try {
    const call = await prepare();
    if (now() >= until) {
      log.warn('lease expired before the provider call; leaving it to the next check');
      return { held: false };
    }
    await call();
    return { held: true, holder };
  } catch (err) {
    return { held: true, holder, error: asEgressError(err).toInfo() };
  }
}
