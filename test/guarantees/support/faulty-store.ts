/** A FirestoreProxyRepository with crash points: a hook runs before and after each write, and may throw (a crash) or wait. */
import type { Firestore } from '@google-cloud/firestore';
import type { ApplyRequest } from '../../../shared/domain/proxy.js';
import type { ProxyStatus } from '../../../shared/domain/status.js';
import type { Logger } from '../../../shared/logger.js';
import type { ProxyEvent } from '../../../shared/store/records.js';
import { FirestoreProxyRepository } from '../../../shared/store/firestore/proxies.js';
import type { ApplyOutcome, DeleteOutcome } from '../../../shared/store/proxy-rules.js';

export type StoreWrite = 'apply' | 'requestDelete' | 'acquireLease' | 'writeStatus' | 'finalise' | 'addEvent';
export type CrashPoint = `${StoreWrite}:${'before' | 'after'}`;

/** Thrown by a crash hook: the invocation dies here (the test's stand-in for a killed function). */
export class Crash extends Error {
  constructor(readonly point: string) {
    super(`injected crash at ${point}`);
  }
}

/**
 * The hook: `holder` is set for lease-holding status writes (a mutating provider call just
 * happened). Throw {@link Crash} to crash there; return normally to go on.
 */
export type CrashHook = (
  point: CrashPoint,
  proxy: string,
  detail: { holder?: string | undefined; result?: unknown },
) => void | Promise<void>;

/** Each write of the real store, with the hook around it. */
export class FaultyProxyStore extends FirestoreProxyRepository {
  hook: CrashHook = () => undefined;

  constructor(db: Firestore, logger: Logger) {
    super(db, logger);
  }

  private async around<T>(write: StoreWrite, proxy: string, holder: string | undefined, run: () => Promise<T>) {
    await this.hook(`${write}:before`, proxy, { holder });
    const result = await run();
    await this.hook(`${write}:after`, proxy, { holder, result });
    return result;
  }

  override apply(request: ApplyRequest, publishTime: number, now: number): Promise<ApplyOutcome> {
    return this.around('apply', request.metadata.name, undefined, () => super.apply(request, publishTime, now));
  }

  override requestDelete(name: string, publishTime: number, now: number): Promise<DeleteOutcome> {
    return this.around('requestDelete', name, undefined, () => super.requestDelete(name, publishTime, now));
  }

  override acquireLease(...args: Parameters<FirestoreProxyRepository['acquireLease']>): Promise<number | undefined> {
    const [name, holder] = args;
    return this.around('acquireLease', name, holder, () => super.acquireLease(...args));
  }

  override writeStatus(name: string, generation: number, status: ProxyStatus, now: number, holder?: string) {
    return this.around('writeStatus', name, holder, () => super.writeStatus(name, generation, status, now, holder));
  }

  override finalise(name: string, generation: number): Promise<boolean> {
    return this.around('finalise', name, undefined, () => super.finalise(name, generation));
  }

  override addEvent(name: string, event: ProxyEvent, keep: number): Promise<void> {
    return this.around('addEvent', name, undefined, () => super.addEvent(name, event, keep));
  }
}
