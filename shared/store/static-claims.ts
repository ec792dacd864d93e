/** The `static` provider's endpoint claims in Firestore `staticClaims/{id}` (the port: `StaticClaimRepository`). */
import { FieldValue, type Firestore } from '@google-cloud/firestore';
import type { Logger } from '../logger.js';
import { COLLECTIONS } from './firestore.js';
import type { ClaimOutcome, ClaimRequest, StaticClaimRepository } from './ports.js';
import { staticClaimSchema, type StaticClaim } from './records.js';
import { runTransaction } from './transaction.js';

const iso = (ms: number) => new Date(ms).toISOString();

export class StaticClaimStore implements StaticClaimRepository {
  constructor(
    private readonly db: Firestore,
    private readonly logger: Logger,
  ) {}

  private get claims() {
    return this.db.collection(COLLECTIONS.staticClaims);
  }

  private parse(data: unknown): StaticClaim | undefined {
    const parsed = staticClaimSchema.safeParse(data);
    if (!parsed.success) this.logger.warn('unreadable static claim ignored', { error: parsed.error.message });
    return parsed.success ? parsed.data : undefined;
  }

  private heldQuery(provider: string, instance: string) {
    return this.claims.where('provider', '==', provider).where('instance', '==', instance).limit(1);
  }

  claim(request: ClaimRequest): Promise<ClaimOutcome> {
    const { provider, instance, candidates, cooldownMs, now } = request;
    return runTransaction(this.db, this.logger, { kind: 'static-claim' }, async (tx) => {
      const mine = await tx.get(this.heldQuery(provider, instance));
      const adopted = mine.docs[0] && this.parse(mine.docs[0].data());
      if (adopted) return { claimed: adopted };
      // Every candidate is read in the transaction, absent ones too: a concurrent claim of any of
      // them conflicts with this one, so two creates never take one endpoint.
      const refs = candidates.map((c) => this.claims.doc(c.id));
      const snaps = refs.length > 0 ? await tx.getAll(...refs) : [];
      const docs = snaps.map((s) => (s.exists ? this.parse(s.data()) : undefined));
      let taken = 0;
      let cooling = 0;
      let nextFreeAt: number | undefined;
      let best: number | undefined;
      docs.forEach((doc, i) => {
        if (doc?.instance !== undefined) return void taken++;
        const releasedAt = doc?.releasedAt;
        if (releasedAt !== undefined && now - releasedAt < cooldownMs) {
          cooling++;
          nextFreeAt = Math.min(nextFreeAt ?? Infinity, releasedAt + cooldownMs);
          return;
        }
        // Never used first, then the one released longest ago; config order breaks ties.
        const rank = (d: StaticClaim | undefined) => d?.releasedAt ?? -Infinity;
        if (best === undefined || rank(doc) < rank(docs[best])) best = i;
      });
      const chosen = best === undefined ? undefined : candidates[best];
      if (best === undefined || !chosen) return { taken, cooling, nextFreeAt };
      const claimed: StaticClaim = {
        provider,
        host: chosen.host,
        port: chosen.port,
        key: chosen.key,
        instance,
        proxy: request.proxy,
        installationId: request.installationId,
        specHash: request.specHash,
        claimedAt: now,
        ...(docs[best]?.releasedAt !== undefined && { releasedAt: docs[best]?.releasedAt }),
      };
      tx.set(refs[best]!, claimed);
      if (chosen.credentials)
        tx.set(this.db.collection(COLLECTIONS.credentials).doc(request.proxy), {
          ...chosen.credentials,
          createdAt: iso(now),
        });
      return { claimed };
    });
  }

  async held(provider: string, instance: string): Promise<StaticClaim | undefined> {
    const snap = await this.heldQuery(provider, instance).get();
    return snap.docs[0] && this.parse(snap.docs[0].data());
  }

  async release(provider: string, instance: string, now: number): Promise<void> {
    await runTransaction(this.db, this.logger, { kind: 'static-release' }, async (tx) => {
      const snap = await tx.get(this.heldQuery(provider, instance));
      const doc = snap.docs[0];
      if (!doc) return;
      const cleared = Object.fromEntries(
        ['instance', 'proxy', 'installationId', 'specHash', 'claimedAt'].map((k) => [k, FieldValue.delete()]),
      );
      tx.update(doc.ref, { ...cleared, releasedAt: now });
    });
  }

  async all(provider: string): Promise<StaticClaim[]> {
    const snap = await this.claims.where('provider', '==', provider).get();
    return snap.docs.flatMap((d) => this.parse(d.data()) ?? []);
  }
}
