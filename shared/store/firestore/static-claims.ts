/** The `static` provider's endpoint claims in Firestore `staticClaims/{id}` (the port: `StaticClaimRepository`). */
import { FieldValue, type Firestore } from '@google-cloud/firestore';
import type { Logger } from '../../logger.js';
import { COLLECTIONS } from './client.js';
import type { ClaimOutcome, ClaimRequest, StaticClaimRepository } from '../ports.js';
import { staticClaimSchema, type StaticClaim } from '../records.js';
import { GRPC_CODES, grpcCode } from '../grpc-codes.js';
import { reasonOf, runTransaction } from './transaction.js';

const iso = (ms: number) => new Date(ms).toISOString();

export class FirestoreStaticClaimRepository implements StaticClaimRepository {
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

  async claim(request: ClaimRequest): Promise<ClaimOutcome> {
    const { provider, instance, candidates, cooldownMs, now } = request;
    const adopted = await this.held(provider, instance);
    if (adopted) return { claimed: adopted };
    // Ranked from one read outside any transaction, then claimed one endpoint at a time, each in a
    // transaction that reads only that endpoint: creates contend only when they race for one
    // endpoint, and the loser moves on to the next. (One transaction reading every candidate and
    // querying the instance's claim made every create conflict with every other; under load the
    // emulator's lock waits turned that into ABORTED creates.)
    const refs = candidates.map((c) => this.claims.doc(c.id));
    const snaps = refs.length > 0 ? await this.db.getAll(...refs) : [];
    const docs = snaps.map((s) => (s.exists ? this.parse(s.data()) : undefined));
    let taken = 0;
    let cooling = 0;
    let nextFreeAt: number | undefined;
    const free: number[] = [];
    docs.forEach((doc, i) => {
      if (doc?.instance !== undefined) return void taken++;
      const releasedAt = doc?.releasedAt;
      if (releasedAt !== undefined && now - releasedAt < cooldownMs) {
        cooling++;
        nextFreeAt = Math.min(nextFreeAt ?? Infinity, releasedAt + cooldownMs);
        return;
      }
      free.push(i);
    });
    // Never used first, then the one released longest ago; config order breaks ties (a stable sort).
    const rank = (i: number) => docs[i]?.releasedAt ?? -Infinity;
    free.sort((a, b) => (rank(a) < rank(b) ? -1 : rank(a) > rank(b) ? 1 : 0));
    let contended: Error | undefined;
    for (const i of free) {
      const chosen = candidates[i]!;
      const ref = refs[i]!;
      try {
        const claimed = await runTransaction(this.db, this.logger, { kind: 'static-claim' }, async (tx) => {
          const snap = await tx.get(ref);
          const doc = snap.exists ? this.parse(snap.data()) : undefined;
          if (doc?.instance !== undefined) return doc.instance === instance ? doc : undefined;
          if (doc?.releasedAt !== undefined && now - doc.releasedAt < cooldownMs) return undefined;
          const claim: StaticClaim = {
            provider,
            host: chosen.host,
            port: chosen.port,
            key: chosen.key,
            instance,
            proxy: request.proxy,
            installationId: request.installationId,
            specHash: request.specHash,
            claimedAt: now,
            ...(doc?.releasedAt !== undefined && { releasedAt: doc.releasedAt }),
          };
          tx.set(ref, claim);
          if (chosen.credentials)
            tx.set(this.db.collection(COLLECTIONS.credentials).doc(request.proxy), {
              ...chosen.credentials,
              createdAt: iso(now),
            });
          return claim;
        });
        if (claimed) return { claimed };
        taken++;
      } catch (err) {
        // Another create holds this endpoint's lock: try the next one, and fail only if all were.
        const code = grpcCode(err);
        if (code !== GRPC_CODES.ABORTED && code !== GRPC_CODES.DEADLINE_EXCEEDED) throw err;
        contended = err instanceof Error ? err : new Error(reasonOf(err));
      }
    }
    if (contended) throw contended;
    return { taken, cooling, nextFreeAt };
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
