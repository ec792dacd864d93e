/** `poolDemand/{pool}.{gateway}` in memory: the rules of demand-rules.ts, as the Firestore store. */
import type { DemandReport } from '../../domain/autoscale.js';
import type { FoldedMark } from '../../domain/usage.js';
import { demandId, demandStep, storedDemandSchema, type DemandOutcome, type StoredDemand } from '../demand-rules.js';
import type { DemandRepository } from '../ports.js';
import { byName } from './state.js';

export class MemoryDemandRepository implements DemandRepository {
  private readonly docs = new Map<string, StoredDemand>();

  record(pool: string, report: DemandReport, now: number, folded?: FoldedMark): Promise<DemandOutcome> {
    const id = demandId(pool, report.gateway);
    const { write, outcome } = demandStep(this.docs.get(id), pool, report, now, folded);
    if (write) this.docs.set(id, structuredClone(write));
    return Promise.resolve(outcome);
  }

  all(pool: string): Promise<StoredDemand[]> {
    return Promise.resolve(
      byName(this.docs)
        .map(([, d]) => storedDemandSchema.parse(structuredClone(d)))
        .filter((d) => d.pool === pool),
    );
  }
}
