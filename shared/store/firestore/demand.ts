/** `poolDemand/{pool}.{gateway}` on Firestore: the gateways' demand and usage reports (rules in demand-rules.ts). */
import type { Firestore } from '@google-cloud/firestore';
import type { DemandReport } from '../../domain/autoscale.js';
import type { FoldedMark } from '../../domain/usage.js';
import {
  demandId,
  demandStep,
  storedDemandSchema,
  USAGE_KEEP_MS,
  type DemandOutcome,
  type StoredDemand,
} from '../demand-rules.js';
import { COLLECTIONS } from './client.js';
import type { DemandRepository } from '../ports.js';

export class FirestoreDemandRepository implements DemandRepository {
  constructor(private readonly db: Firestore) {}

  /** One read and at most one write, in a transaction: a concurrent copy of the report is decided on what this one wrote. */
  record(pool: string, report: DemandReport, now: number, folded?: FoldedMark): Promise<DemandOutcome> {
    const ref = this.db.collection(COLLECTIONS.poolDemand).doc(demandId(pool, report.gateway));
    return this.db.runTransaction(async (tx) => {
      const parsed = storedDemandSchema.safeParse((await tx.get(ref)).data());
      const { write, outcome } = demandStep(parsed.success ? parsed.data : undefined, pool, report, now, folded);
      // expireAt: the Firestore TTL policy deletes the document some time after it (infra/terraform/firestore.tf),
      // long after its demand expired: its usage counters must be folded first.
      if (write) tx.set(ref, { ...write, expireAt: new Date(write.expiresAtMs + USAGE_KEEP_MS) });
      return outcome;
    });
  }

  async all(pool: string): Promise<StoredDemand[]> {
    const snap = await this.db.collection(COLLECTIONS.poolDemand).where('pool', '==', pool).get();
    return snap.docs.flatMap((d) => {
      const parsed = storedDemandSchema.safeParse(d.data());
      return parsed.success ? [parsed.data] : [];
    });
  }
}
