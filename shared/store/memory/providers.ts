/** `providers/{name}` in memory: the latest verdict per provider, parsed on read as the Firestore one. */
import type { ProviderStatusRepository } from '../ports.js';
import { providerStatusSchema, type ProviderStatus } from '../records.js';
import { byName } from './state.js';

export class MemoryProviderStatusRepository implements ProviderStatusRepository {
  private readonly verdicts = new Map<string, ProviderStatus>();

  write(status: ProviderStatus): Promise<void> {
    this.verdicts.set(status.name, structuredClone(status));
    return Promise.resolve();
  }

  get(name: string): Promise<ProviderStatus | undefined> {
    const parsed = providerStatusSchema.safeParse(structuredClone(this.verdicts.get(name)));
    return Promise.resolve(parsed.success ? parsed.data : undefined);
  }

  all(): Promise<ProviderStatus[]> {
    return Promise.resolve(
      byName(this.verdicts).map(([, status]) => providerStatusSchema.parse(structuredClone(status))),
    );
  }
}
