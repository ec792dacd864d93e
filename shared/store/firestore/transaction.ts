/**
 * Every Firestore transaction of the store, run one way: few attempts, each with a deadline, and
 * one log line per transaction naming the documents it read and wrote, its attempts, its wait and
 * why it was retried (docs/guarantees.md, "Converge after chaos").
 */
import type { Firestore, Transaction } from '@google-cloud/firestore';
import type { Logger } from '../../logger.js';
import { grpcCode, GRPC_CODES } from '../grpc-codes.js';

/** How a transaction runs. */
export interface TransactionOptions {
  /** What the transaction is, for its log line (`report`, `apply`, `pool-reconcile`, …). */
  kind: string;
  /**
   * Attempts in all (default 3). Each retry queues on the same documents again; Firestore's own
   * default of 5, at 20–30 s of lock wait each, held a push for minutes (issue "Converge after chaos").
   */
  maxAttempts?: number;
  /**
   * How long one attempt's reads and decision may take (default 10 s). A transaction waiting on a
   * lock past it gives way: it is rolled back, which frees what it holds, and retried after a backoff.
   */
  attemptDeadlineMs?: number;
  /** The caller gave up: no further attempt is started. */
  signal?: AbortSignal | undefined;
}

/** One transaction as logged: what it touched, how often it ran, how long it waited, and why it ran again. */
export interface TransactionRecord {
  kind: string;
  reads: string[];
  writes: string[];
  attempts: number;
  waitMs: number;
  retryReasons: string[];
  outcome: 'committed' | 'failed';
}

/** Transactions that took longer than this, or more than one attempt, are logged at INFO; others at DEBUG. */
const SLOW_MS = 1000;
const DEFAULT_ATTEMPTS = 3;
const DEFAULT_ATTEMPT_DEADLINE_MS = 10_000;

/** An attempt that ran past its deadline. DEADLINE_EXCEEDED, so the client rolls it back and retries it. */
class AttemptDeadline extends Error {
  readonly code = GRPC_CODES.DEADLINE_EXCEEDED;
  constructor(ms: number) {
    super(`transaction attempt ran past its ${ms} ms deadline (waiting on a lock?); rolled back`);
  }
}

/** The caller went away: not retried (no gRPC code), answered by nobody. */
export class CallerGone extends Error {
  override readonly name = 'CallerGone';
  constructor() {
    super('the caller closed the request; the work was stopped');
  }
}

/**
 * The transaction handed to the work, noting the paths it reads and writes (a query, whose
 * documents the client does not name before they arrive, is noted as `query`).
 */
function recording(tx: Transaction, reads: Set<string>, writes: Set<string>): Transaction {
  return new Proxy(tx, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      const noted =
        key === 'get' ? reads : ['set', 'create', 'update', 'delete'].includes(String(key)) ? writes : undefined;
      return (...args: unknown[]) => {
        const first = args[0];
        if (noted && typeof first === 'object' && first !== null)
          noted.add('path' in first && typeof first.path === 'string' ? first.path : 'query');
        return Reflect.apply(value, target, args) as unknown;
      };
    },
  });
}

/**
 * Runs `work` in a Firestore transaction (see {@link TransactionOptions}) and logs it.
 *
 * @throws what the last attempt failed with (ABORTED after contention, DEADLINE_EXCEEDED after
 *   waiting), or CallerGone when `signal` fired between attempts
 */
export async function runTransaction<T>(
  db: Firestore,
  logger: Logger,
  options: TransactionOptions,
  work: (tx: Transaction) => Promise<T>,
): Promise<T> {
  const deadlineMs = options.attemptDeadlineMs ?? DEFAULT_ATTEMPT_DEADLINE_MS;
  const started = Date.now();
  const reads = new Set<string>();
  const writes = new Set<string>();
  const retryReasons: string[] = [];
  let attempts = 0;
  let failedInAttempt = false;
  const record = (outcome: TransactionRecord['outcome']): TransactionRecord => ({
    kind: options.kind,
    reads: [...reads],
    writes: [...writes],
    attempts,
    waitMs: Date.now() - started,
    retryReasons,
    outcome,
  });
  try {
    const result = await db.runTransaction(
      async (tx) => {
        if (attempts > 0 && !failedInAttempt) retryReasons.push('commit aborted: a concurrent transaction won');
        failedInAttempt = false;
        attempts++;
        if (options.signal?.aborted) throw new CallerGone();
        writes.clear();
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new AttemptDeadline(deadlineMs)), deadlineMs);
        });
        const attempt = work(recording(tx, reads, writes));
        // The work left behind after a deadline fails on the rolled-back transaction: not an error of ours.
        attempt.catch(() => undefined);
        try {
          return await Promise.race([attempt, late]);
        } catch (err) {
          failedInAttempt = true;
          retryReasons.push(reasonOf(err));
          throw err;
        } finally {
          clearTimeout(timer);
        }
      },
      { maxAttempts: options.maxAttempts ?? DEFAULT_ATTEMPTS },
    );
    logTransaction(logger, record('committed'));
    return result;
  } catch (err) {
    if (!(err instanceof CallerGone)) {
      if (retryReasons.length < attempts) retryReasons.push(reasonOf(err));
      logTransaction(logger, record('failed'), err);
    }
    throw err;
  }
}

/**
 * Logs one transaction, or one preconditioned read-decide-write that stands in for one: failed at
 * WARNING, retried or slow at INFO, the rest at DEBUG. The chaos report ranks documents by these lines.
 */
export function logTransaction(logger: Logger, line: TransactionRecord, error?: unknown): void {
  if (line.outcome === 'failed') logger.warn('transaction failed', { transaction: line, error });
  else if (line.attempts > 1 || line.waitMs > SLOW_MS) logger.info('transaction', { transaction: line });
  else logger.debug('transaction', { transaction: line });
}

/** Why an attempt failed, short: its gRPC code's name and the message's first line. */
export function reasonOf(err: unknown): string {
  const code = grpcCode(err);
  const known = Object.entries(GRPC_CODES).find(([, c]) => c === code)?.[0];
  const name = known ?? (typeof code === 'number' ? `code ${code}` : 'error');
  const message = err instanceof Error ? (err.message.split('\n')[0] ?? '') : String(err);
  return `${name}: ${message.slice(0, 200)}`;
}
