/** `providers/{name}` on Firestore: the provider-health monitor's latest verdict per provider. */
import type { Firestore } from '@google-cloud/firestore';
import { COLLECTIONS } from './client.js';
import type { ProviderStatusRepository } from '../ports.js';
import { providerStatusSchema, type ProviderStatus } from '../records.js';

export class FirestoreProviderStatusRepository implements ProviderStatusRepository {
  constructor(private readonly db: Firestore) {}

  async write(status: ProviderStatus): Promise<void> {
    await this.db.collection(COLLECTIONS.providers).doc(status.name).set(status);
  }

  async get(name: string): Promise<ProviderStatus | undefined> {
    const parsed = providerStatusSchema.safeParse(
      (await this.db.collection(COLLECTIONS.providers).doc(name).get()).data(),
    );
    return parsed.success ? parsed.data : undefined;
  }

  /** Every verdict, in name order. */
  async all(): Promise<ProviderStatus[]> {
    const snap = await this.db.collection(COLLECTIONS.providers).get();
    return snap.docs.flatMap((d) => {
      const parsed = providerStatusSchema.safeParse(d.data());
      return parsed.success ? [parsed.data] : [];
    });
  }
}
