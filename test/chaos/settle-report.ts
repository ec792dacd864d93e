/**
 * What a chaos run reports about convergence: per name, the time from its last request to the state
 * it settled in (as a distribution), and the documents the store's transaction log lines name most
 * (shared/store/firestore/transaction.ts), from the functions' logs of the stack.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';

/** The part of a `transaction` log line (shared/store/firestore/transaction.ts#TransactionRecord) the ranking reads. */
const transactionLineSchema = z.object({
  transaction: z.object({
    reads: z.array(z.string()),
    writes: z.array(z.string()),
    attempts: z.number(),
    outcome: z.string(),
  }),
});

/** Settle times in seconds: how many names settled, quantiles, and the names never settled. */
export interface SettleDistribution {
  settled: number;
  unsettled: string[];
  p50: number;
  p90: number;
  p99: number;
  max: number;
  /** Names that took longer than three minutes after their last request. */
  overThreeMinutes: number;
}

/** One document as the transaction log lines name it. */
export interface HotDocument {
  path: string;
  /** Transactions (or preconditioned writes) that read or wrote it. */
  transactions: number;
  /** Attempts beyond the first, over those transactions. */
  retries: number;
  failed: number;
}

const quantile = (sorted: number[], q: number) =>
  sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);

/**
 * @param lastRequestAt - each name's last published request (epoch ms)
 * @param settledAt - when each name was first seen settled for good (`verify.ts#settle`)
 */
export function settleDistribution(
  lastRequestAt: ReadonlyMap<string, number>,
  settledAt: ReadonlyMap<string, number>,
): SettleDistribution {
  const seconds: number[] = [];
  const unsettled: string[] = [];
  for (const [name, at] of lastRequestAt) {
    const done = settledAt.get(name);
    if (done === undefined) unsettled.push(name);
    else seconds.push(Math.max(0, done - at) / 1000);
  }
  seconds.sort((a, b) => a - b);
  const round = (n: number) => Math.round(n * 10) / 10;
  return {
    settled: seconds.length,
    unsettled,
    p50: round(quantile(seconds, 0.5)),
    p90: round(quantile(seconds, 0.9)),
    p99: round(quantile(seconds, 0.99)),
    max: round(seconds.at(-1) ?? 0),
    overThreeMinutes: seconds.filter((s) => s > 180).length,
  };
}

/** The `top` documents named most by the transaction lines of `logs/function-*.log` under `home`. */
export function hottestDocuments(home: string, top = 10): HotDocument[] {
  const dir = join(home, 'logs');
  const byPath = new Map<string, HotDocument>();
  let files: string[] = [];
  try {
    files = readdirSync(dir).filter((f) => f.startsWith('function-'));
  } catch {
    return [];
  }
  for (const file of files) {
    for (const text of readFileSync(join(dir, file), 'utf8').split('\n')) {
      if (!text.includes('"transaction"')) continue;
      let json: unknown;
      try {
        json = JSON.parse(text);
      } catch {
        continue;
      }
      const parsed = transactionLineSchema.safeParse(json);
      if (!parsed.success) continue;
      const { reads, writes, attempts, outcome } = parsed.data.transaction;
      const paths = new Set([...reads, ...writes]);
      for (const path of paths) {
        const hot = byPath.get(path) ?? { path, transactions: 0, retries: 0, failed: 0 };
        hot.transactions++;
        hot.retries += Math.max(0, attempts - 1);
        if (outcome === 'failed') hot.failed++;
        byPath.set(path, hot);
      }
    }
  }
  return [...byPath.values()]
    .sort((a, b) => b.retries + b.failed - (a.retries + a.failed) || b.transactions - a.transactions)
    .slice(0, top);
}
