/** `providers/{name}`: the provider-health monitor's latest verdict per provider. */
import type { Firestore } from '@google-cloud/firestore';
import { z } from 'zod';
import { COLLECTIONS } from './firestore.js';

export const providerStatusSchema = z.object({
  name: z.string(),
  type: z.string(),
  status: z.enum(['Healthy', 'Unhealthy', 'Unknown']),
  message: z.string(),
  latencyMs: z.number(),
  lastCheckAt: z.string(),
  detail: z.record(z.string(), z.object({ ok: z.boolean(), message: z.string() })).optional(),
});
export type ProviderStatus = z.infer<typeof providerStatusSchema>;

export class ProviderStore {
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

  async all(): Promise<ProviderStatus[]> {
    const snap = await this.db.collection(COLLECTIONS.providers).get();
    return snap.docs.flatMap((d) => {
      const parsed = providerStatusSchema.safeParse(d.data());
      return parsed.success ? [parsed.data] : [];
    });
  }
}
